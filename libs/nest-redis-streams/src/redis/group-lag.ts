import { compareStreamIds } from '../keys/index.js';

/** What XINFO GROUPS says about one group. */
export interface GroupCounters {
  /** `lag` as Redis computes it (entries-added − entries-read); null when Redis cannot tell. */
  lag: number | null;
  lastDeliveredId: string;
}

/** What XINFO STREAM says about the stream. */
export interface StreamCounters {
  length: number;
  lastGeneratedId: string;
  /** Id of the first entry still in the stream; null when it is empty. */
  firstEntryId: string | null;
}

/**
 * The lag to report for a group: Redis' figure where it can be trusted, the exact figure where the
 * stream itself says it, null where Redis' figure is known to be wrong.
 *
 * Why: Redis derives lag from the group's entries-read counter, and on Redis 7.0 a replica does
 * not advance that counter when the master's group reads (the replicated XCLAIM … LASTID moves
 * last-delivered-id only). After a failover, or an AOF reload, the counter lags behind, and so
 * Redis reports a lag that never goes away although everything was handled (seen: ~500 for good,
 * readiness with maxLag down forever). Entries that trimming removed before the group read them
 * inflate it the same way. Neither changes what is actually waiting, which the ids tell:
 * - delivered up to the last entry ever added → 0;
 * - every entry in the stream lies after last-delivered-id → the stream's length;
 * - Redis' figure above the length → impossible, so unknown (null);
 * - otherwise Redis' figure (exact again once `nrsRepairEntriesRead` fixed a stale counter).
 */
export function trustedLag(group: GroupCounters, stream: StreamCounters): number | null {
  if (stream.length === 0 || compareStreamIds(group.lastDeliveredId, stream.lastGeneratedId) >= 0) return 0;
  if (stream.firstEntryId !== null && compareStreamIds(stream.firstEntryId, group.lastDeliveredId) > 0) return stream.length;
  if (group.lag === null || group.lag > stream.length) return null;
  return group.lag;
}

/** Reads the figures `trustedLag` needs from an XINFO STREAM reply (as an object). */
export function streamCounters(info: Record<string, unknown>): StreamCounters {
  const first = info['first-entry'] as [string, unknown] | null | undefined;
  return {
    length: Number(info['length']),
    lastGeneratedId: String(info['last-generated-id']),
    firstEntryId: first ? String(first[0]) : null,
  };
}
