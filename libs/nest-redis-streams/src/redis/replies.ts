/** Raw reply shapes of the stream commands, as ioredis returns them (RESP2, string mode). */

/** One entry: its id and flat field list; fields are null when the payload was deleted (Redis < 7). */
export type StreamEntryReply = [id: string, fields: string[] | null];

/** XREADGROUP: one [stream, entries] pair per stream read, or null on timeout. */
export type XReadGroupReply = Array<[stream: string, entries: StreamEntryReply[]]> | null;

/**
 * Hands every row of a read reply to `take`, in order, then empties the list.
 *
 * Why empty it: a read loop is an async function that lives as long as its consumer, and until V8
 * optimises it, its suspended frame keeps pointing at the last reply it read. That frame is in the
 * old generation, so the reply survives young-generation collections and gets promoted with every
 * entry's strings in it, long after the entries were handled: over a 1,000,000-entry drain,
 * 143-267 MiB promoted and a peak RSS of 184-197 MiB, against 15 MiB and 140-150 MiB with the
 * list emptied (BENCHMARKS.md, "Memory"). An emptied list leaves the frame holding nothing.
 */
export function takeRows<T>(rows: T[], take: (row: T) => void): void {
  for (let i = 0; i < rows.length; i++) take(rows[i]);
  rows.length = 0;
}

/**
 * XAUTOCLAIM ... JUSTID: next cursor, the claimed ids only (their delivery counts are left as they
 * were) and (Redis ≥ 7) ids whose payload no longer exists.
 */
export type XAutoClaimJustIdReply = [cursor: string, ids: string[], deletedIds?: string[]];

/** XPENDING extended form: one row per pending entry. */
export type XPendingRow = [id: string, consumer: string, idleMs: number, deliveries: number];

/** XPENDING summary form. */
export type XPendingSummary = [
  count: number,
  smallestId: string | null,
  greatestId: string | null,
  consumers: Array<[string, string]> | null,
];

/** Flat key/value list of XINFO replies turned into an object. */
export function pairsToObject(pairs: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) out[String(pairs[i])] = pairs[i + 1];
  return out;
}
