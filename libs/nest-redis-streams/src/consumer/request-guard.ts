import type { ScannedEntry } from '../codec/envelope.js';
import type { SkipReason } from '../events/transport-events.js';
import { CONSUMER_MESSAGES } from './consumer.messages.js';

/** Why an entry is acknowledged without running its handler, in words for the log. */
export interface Skip {
  reason: SkipReason;
  detail: string;
}

/** What the guard needs to know of the reading consumer. */
export interface GuardContext {
  stream: string;
  group: string;
  kind: 'event' | 'message';
  /** Requests are answered only on reply streams whose key starts with this. */
  replyStreamPrefix: string;
  /** Read only for requests with a deadline: most entries have none, and this runs per entry. */
  clock: () => number;
}

/**
 * Entries a group must acknowledge without running, checked before decoding (an entry meant for
 * another group must not be parked as undecodable in this one's name either):
 * - a re-drive addressed to another group of the stream (that group had failed it; this one had
 *   already handled it);
 * - a request whose reply stream lies outside the reply prefix (answering it would let anyone who
 *   can write a request make the server XADD into any stream);
 * - a request past its deadline: the caller was told it failed, so running it now would do work
 *   nobody waits for (a payment after "timed out"). Deadlines are the client host's clock, so the
 *   check is only as good as the clocks agree.
 */
export function skipBeforeRunning(id: string, scan: ScannedEntry, at: GuardContext): Skip | null {
  if (scan.targetGroup !== undefined && scan.targetGroup !== at.group) {
    return { reason: 'other-group', detail: CONSUMER_MESSAGES.redrivenToOtherGroup(scan.targetGroup, at.group) };
  }
  if (at.kind === 'message' && scan.replyTo !== undefined && !scan.replyTo.startsWith(at.replyStreamPrefix)) {
    return {
      reason: 'reply-to-refused',
      detail: CONSUMER_MESSAGES.replyToRefused(id, at.stream, scan.replyTo, at.replyStreamPrefix),
    };
  }
  if (scan.deadline === undefined) return null;
  const now = at.clock();
  if (now > scan.deadline) {
    return {
      reason: 'request-expired',
      detail: CONSUMER_MESSAGES.requestExpired(id, at.stream, at.group, now - scan.deadline, scan.deadline),
    };
  }
  return null;
}
