import type { Redis } from 'ioredis';
import { claimEpochKey } from '../keys/index.js';
import type { StreamEntryReply } from '../redis/replies.js';
import { RECOVERY_MESSAGES } from './recovery.messages.js';

/**
 * One entry of `XREADGROUP … CLAIM <min-idle>` (Redis 8.4+): every entry has four elements, the
 * last two being how long it sat idle before this read and how many times it had been delivered
 * BEFORE this read (0 and 0 for an entry never delivered).
 */
export type ClaimReadEntry = [id: string, fields: string[] | null, idleMs: number, deliveredBefore: number];

/** XREADGROUP … CLAIM: one [stream, entries] pair per stream read, or null on timeout. */
export type ClaimReadReply = Array<[stream: string, entries: ClaimReadEntry[]]> | null;

/** An entry the read took over from a consumer that left it idle past min-idle. */
export interface ClaimedByRead {
  id: string;
  fields: string[] | null;
  /** Deliveries counting this one: what the dead-letter budget compares with maxDeliveries. */
  deliveries: number;
  idleMs: number;
}

/** A `XREADGROUP … CLAIM` reply sorted for the consumer. */
export interface ClaimReadResult {
  /** Entries delivered for the first time (delivery 1), as a plain `>` read gives them. */
  fresh: StreamEntryReply[];
  /** Entries taken over from idle consumers (possibly a dead incarnation of this one). */
  claimed: ClaimedByRead[];
  /**
   * Entries this process holds already (running, waiting for a slot, acking) that Redis handed
   * back because they idled past min-idle: running them again would run an entry twice in one
   * process. The read reset their idle time and raised their delivery count in Redis, so they
   * need nothing else; it also means lease renewal lagged behind min-idle.
   */
  alreadyHeld: string[];
}

/**
 * Arguments of one read that takes over idle entries and reads new ones in a single command:
 * Redis serves the idle pending entries (oldest first) before new ones, within COUNT, and a
 * blocked read wakes as soon as the oldest pending entry becomes claimable, so reclaiming is
 * event-driven instead of waiting for the next XAUTOCLAIM round.
 */
export function claimReadArgs(
  group: string,
  consumer: string,
  count: number,
  blockMs: number | null,
  minIdleMs: number,
  stream: string,
): Array<string | number> {
  const block = blockMs === null ? [] : ['BLOCK', blockMs];
  return ['GROUP', group, consumer, 'COUNT', count, ...block, 'CLAIM', minIdleMs, 'STREAMS', stream, '>'];
}

/**
 * Splits a CLAIM read into new, claimed and already-held entries. The delivery count Redis
 * reports is the count before this delivery, so a claimed entry's deliveries are that plus one
 * (a budget compared with the reported figure would allow one delivery too many). An entry with
 * idle 0 and no earlier delivery is new.
 */
export function splitClaimRead(reply: ClaimReadReply, isHeld: (id: string) => boolean): ClaimReadResult {
  const result: ClaimReadResult = { fresh: [], claimed: [], alreadyHeld: [] };
  const entries = reply?.[0]?.[1];
  if (!entries) return result;
  for (let i = 0; i < entries.length; i++) {
    const [id, fields, idleMs, deliveredBefore] = entries[i];
    const before = Number(deliveredBefore ?? 0);
    if (before === 0) result.fresh.push([id, fields]);
    else if (isHeld(id)) result.alreadyHeld.push(id);
    else result.claimed.push({ id, fields, deliveries: before + 1, idleMs: Number(idleMs ?? 0) });
  }
  // Same reason as takeRows: the read loop's frame must not keep the reply alive.
  entries.length = 0;
  return result;
}

/**
 * One `XREADGROUP … CLAIM` read of `stream`. What it does not cover, and so what the XAUTOCLAIM
 * sweep (the reclaimer, at its own interval) must keep doing: pending entries whose payload was
 * trimmed are skipped by the read and stay in the PEL for ever (XAUTOCLAIM reports them, and they
 * are dead-lettered as trimmed); and entries pending with consumers of other groups' streams are
 * not its business. Only for a server whose every node has the capability (`ServerCapabilities.all.claim`).
 *
 * Before every such read the group's claim epoch hash is marked `claim-reads`: a blocking read
 * cannot run in a script, so its claims cannot raise the epoch, and an old owner's ack must not
 * take the plain-XACK path (redis/lua/claim-epoch.ts). The mark is awaited (a refused one fails
 * the read) and set again each time, so a hash lost meanwhile (restart, eviction) comes back
 * before the next claim.
 */
export async function readWithClaim(
  reader: Redis,
  target: { stream: string; group: string; consumer: string },
  count: number,
  blockMs: number | null,
  minIdleMs: number,
  isHeld: (id: string) => boolean,
): Promise<ClaimReadResult> {
  const args = claimReadArgs(target.group, target.consumer, count, blockMs, minIdleMs, target.stream);
  await reader.hset(claimEpochKey(target.stream, target.group), 'claim-reads', '1');
  const reply = (await reader.call('XREADGROUP', ...args)) as ClaimReadReply;
  return splitClaimRead(reply, isHeld);
}

/** Where a consumer's CLAIM reads report what they took over. */
export interface ClaimReadReport {
  logger: { warn(message: string): void };
  events: { emit(event: 'reclaimed', payload: { stream: string; group: string; consumer: string; count: number }): void };
}

/** Logs and emits `reclaimed` for entries a CLAIM read took over, as a reclaim round does. */
export function reportClaimedByRead(
  report: ClaimReadReport,
  target: { stream: string; group: string; consumer: string },
  count: number,
): void {
  const { stream, group, consumer } = target;
  report.logger.warn(RECOVERY_MESSAGES.reclaimed(count, stream, group));
  report.events.emit('reclaimed', { stream, group, consumer, count });
}
