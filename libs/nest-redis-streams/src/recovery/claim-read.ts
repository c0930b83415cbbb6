import type { Cluster, Redis } from 'ioredis';
import { claimEpochKey } from '../keys/index.js';
import { LeanScript } from '../redis/lean-script.js';
import { CLAIM_READ_COUNTED } from '../redis/lua/claim-read.js';
import type { StreamEntryReply } from '../redis/replies.js';
import { RECOVERY_MESSAGES } from './recovery.messages.js';

/**
 * One entry of `XREADGROUP … CLAIM <min-idle>` (Redis 8.4+): every entry has four elements, the
 * last two being how long it sat idle before this read and how many times it had been delivered
 * BEFORE this read (0 and 0 for an entry never delivered).
 */
export type ClaimReadEntry = [id: string, fields: string[] | null, idleMs: number, deliveredBefore: number];

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
  /**
   * The claim epoch to stamp the new entries with: '' while the group's epoch carries the
   * `claim-reads` mark of a 0.2 consumer's unscripted CLAIM reads (its acks stay checked).
   */
  epoch: string;
  /**
   * With nothing read: how long until the oldest pending entry, another consumer's, becomes
   * claimable (ms); -1 when unknown (see redis/lua/claim-read.ts).
   */
  claimableInMs: number;
}

/**
 * Splits a CLAIM read into new, claimed and already-held entries. The delivery count Redis
 * reports is the count before this delivery, so a claimed entry's deliveries are that plus one
 * (a budget compared with the reported figure would allow one delivery too many). An entry with
 * idle 0 and no earlier delivery is new; one idle with none (its count given back) is taken over.
 */
export function splitClaimRead(
  entries: Array<ClaimReadEntry | StreamEntryReply> | undefined,
  isHeld: (id: string) => boolean,
  epoch = '',
): ClaimReadResult {
  const result: ClaimReadResult = { fresh: [], claimed: [], alreadyHeld: [], epoch, claimableInMs: -1 };
  if (!entries) return result;
  for (let i = 0; i < entries.length; i++) {
    const [id, fields, idleMs, deliveredBefore] = entries[i] as ClaimReadEntry;
    const before = Number(deliveredBefore ?? 0);
    const idle = Number(idleMs ?? 0);
    // Pending with no delivery counted is not new: handed back unstarted (the count given back)
    // or set back by a deferral, it was another consumer's, and is taken over like any other.
    if (before === 0 && idle === 0) result.fresh.push([id, fields as string[]]);
    else if (isHeld(id)) result.alreadyHeld.push(id);
    else result.claimed.push({ id, fields, deliveries: before + 1, idleMs: idle });
  }
  // Same reason as takeRows: the read loop's frame must not keep the reply alive.
  entries.length = 0;
  return result;
}

/** The stream, group and consumer a CLAIM read reads for. */
export interface ClaimReadTarget {
  stream: string;
  group: string;
  consumer: string;
}

const CLAIM_READ = new LeanScript<[epoch: string, entries: Array<ClaimReadEntry | StreamEntryReply>, wait: number]>(
  CLAIM_READ_COUNTED,
  2,
);

/**
 * One non-blocking read that takes over idle entries and reads new ones (Redis 8.4+): Redis serves
 * the idle pending entries (oldest first) before new ones, within COUNT. It runs in a script that
 * raises the group's claim epoch when it took anything over (redis/lua/claim-read.ts), so the
 * group's acks keep the plain-XACK path; a blocking read cannot run in a script, so the read loop
 * sends this one now and then and plain reads in between (see ReadLoop).
 *
 * What it does not cover, and so what the XAUTOCLAIM sweep (the reclaimer, at its own interval)
 * must keep doing: pending entries whose payload was trimmed are skipped by the read and stay in
 * the PEL for ever (XAUTOCLAIM reports them, and they are dead-lettered as trimmed); and entries
 * pending with consumers of other groups' streams are not its business. Only for a server whose
 * every node has the capability (`ServerCapabilities.all.claim`).
 *
 * `claimCount` caps what it takes over: CLAIM counts a delivery of each entry it claims, and the
 * guide promises that an entry the library takes over is counted only when its handler starts, so
 * the consumer asks for no more than it can start now. The rest of `count` is read as new entries.
 */
export async function readWithClaim(
  reader: Redis | Cluster,
  target: ClaimReadTarget,
  count: number,
  minIdleMs: number,
  isHeld: (id: string) => boolean,
  claimCount = count,
): Promise<ClaimReadResult> {
  const { stream, group, consumer } = target;
  const [epoch, entries, wait] = await CLAIM_READ.run(reader, [
    stream,
    claimEpochKey(stream, group),
    group,
    consumer,
    count,
    minIdleMs,
    claimCount,
  ]);
  const result = splitClaimRead(entries, isHeld, epoch);
  result.claimableInMs = Number(wait);
  return result;
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
