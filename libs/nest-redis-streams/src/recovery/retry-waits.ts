import type { ChainableCommander, Redis } from 'ioredis';
import { retryWaitChecksKey, retryWaitsKey } from '../keys/index.js';
import type { XPendingRow } from '../redis/replies.js';

// A failed entry waits for its retry in the PEL with its idle time backdated (see
// consumer/delivery-policy.ts): any consumer's reclaimer takes it once the back-off is over,
// which stays right when the failing consumer dies meanwhile. The backdated idle time is a time
// that did not happen, though: an entry 2 s old would read 29 s idle. The retry script
// (redis/lua/retry-if-owned.ts) records the real times beside the stream; everything operators
// read (health, metrics, the console, the CLI) corrects the PEL's idle time with them here.

/** How the records are kept; see redis/lua/retry-if-owned.ts. */
export const RETRY_WAITS = {
  /** Both keys expire when no retry is written for this long (a record unread so long is moot). */
  ttlMs: 24 * 60 * 60 * 1000,
  /** Old records checked for staleness (and removed when stale) by each retry write. */
  checksPerWrite: 16,
  /**
   * A record holds while the PEL's delivery time is within this of the backdated one it wrote
   * (the two are read with different commands' clocks). A later real delivery is at least the
   * back-dating later, so only a back-dating smaller than this can be mistaken, and then the
   * idle time it corrects is off by less than this anyway.
   */
  toleranceMs: 25,
};

/** What really happened to an entry waiting for its retry (Redis' clock, ms since the epoch). */
export interface RetryWait {
  /** The delivery time the PEL was given: now less the backdated idle time. */
  backdatedTo: number;
  /** When its handler failed and the retry was scheduled: its real last activity. */
  failedAt: number;
  /** When the back-off is over and any consumer's reclaimer may retry it. */
  dueAt: number;
}

/** A PEL row's idle time as it really is, and when its retry is due (null: not waiting for one). */
export interface RealIdle {
  idleMs: number;
  retryAt: number | null;
}

/** A stored record (`<backdated>:<failed at>:<due at>`); null when absent or not one. */
export function parseRetryWait(raw: string | null | undefined): RetryWait | null {
  const parts = (raw ?? '').split(':').map(Number);
  if (parts.length !== 3 || !parts.every(Number.isSafeInteger)) return null;
  const [backdatedTo, failedAt, dueAt] = parts;
  return { backdatedTo, failedAt, dueAt };
}

/**
 * The real idle time of a PEL row whose idle time Redis reported at `now` (Redis' clock): the
 * record applies only while the PEL still holds the delivery time the retry backdated (any later
 * delivery, claim or renewal wrote a real one, and the record is stale).
 */
export function realIdle(idleMs: number, now: number, wait: RetryWait | null): RealIdle {
  if (!wait || Math.abs(now - idleMs - wait.backdatedTo) > RETRY_WAITS.toleranceMs) return { idleMs, retryAt: null };
  return { idleMs: Math.max(0, now - wait.failedAt), retryAt: wait.dueAt };
}

/** Queues the two reads that go beside a group's XPENDING: Redis' time and whether any retry waits. */
export function queueRetryWaitProbe(pipeline: ChainableCommander, stream: string, group: string): void {
  pipeline.time();
  pipeline.zcard(retryWaitChecksKey(stream, group));
}

/** Redis' time (ms) from a TIME reply; null when the reply is an error or not one. */
export function timeOf([err, reply]: [Error | null, unknown]): number | null {
  if (err || !Array.isArray(reply)) return null;
  return Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000);
}

/** Queues the HMGET of the records of `ids` (read back with `parseRetryWaits`). */
export function queueRetryWaits(pipeline: ChainableCommander, stream: string, group: string, ids: readonly string[]): void {
  pipeline.hmget(retryWaitsKey(stream, group), ...ids);
}

/** The records an HMGET reply holds, by id; empty on an error (an older ACL: idle times stay Redis'). */
export function parseRetryWaits(ids: readonly string[], [err, reply]: [Error | null, unknown]): Map<string, RetryWait> {
  const found = new Map<string, RetryWait>();
  if (err || !Array.isArray(reply)) return found;
  ids.forEach((id, i) => {
    const wait = parseRetryWait(reply[i] as string | null);
    if (wait) found.set(id, wait);
  });
  return found;
}

/** The records of `ids` in one round trip; empty when they cannot be read. */
export async function readRetryWaits(
  redis: Redis,
  stream: string,
  group: string,
  ids: readonly string[],
): Promise<Map<string, RetryWait>> {
  const pipeline = redis.pipeline();
  queueRetryWaits(pipeline, stream, group, ids);
  const [reply] = (await pipeline.exec().catch(() => null)) ?? [];
  return parseRetryWaits(ids, reply ?? [new Error('no reply'), null]);
}

/** The real idle time of each row (in order), given Redis' time of the XPENDING and the records read. */
export function realIdles(rows: readonly XPendingRow[], now: number | null, waits: Map<string, RetryWait>): RealIdle[] {
  return rows.map(([id, , idle]) =>
    now === null ? { idleMs: Number(idle), retryAt: null } : realIdle(Number(idle), now, waits.get(id) ?? null),
  );
}
