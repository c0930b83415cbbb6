/** Raw reply shapes of the stream commands, as ioredis returns them (RESP2, string mode). */

/** One entry: its id and flat field list; fields are null when the payload was deleted (Redis < 7). */
export type StreamEntryReply = [id: string, fields: string[] | null];

/** XREADGROUP: one [stream, entries] pair per stream read, or null on timeout. */
export type XReadGroupReply = Array<[stream: string, entries: StreamEntryReply[]]> | null;

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
