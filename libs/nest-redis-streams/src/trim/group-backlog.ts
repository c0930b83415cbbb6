import type { Redis } from 'ioredis';
import { streamCounters, trustedLag } from '../redis/group-lag.js';
import { type XPendingSummary, pairsToObject } from '../redis/replies.js';
import { minStreamId, nextStreamId } from '../keys/index.js';

/** What one consumer group of a stream still needs. */
export interface GroupBacklog {
  name: string;
  /** Delivered and not acknowledged. */
  pending: number;
  /**
   * Not delivered yet (`XINFO GROUPS` lag, checked against the stream's ids as in the health figures:
   * a stale entries-read after a failover would otherwise make every group look at risk); null
   * when it cannot be known (before 7.0, after XDEL).
   */
  lag: number | null;
  lastDeliveredId: string;
  /** Smallest id in the group's PEL; null when nothing is pending. */
  oldestPendingId: string | null;
}

/** The consumer groups of a stream with their pending and undelivered entries; [] for a missing stream. */
export async function readGroupBacklogs(redis: Redis, stream: string): Promise<GroupBacklog[]> {
  // One round trip, so the groups and the stream's ids are read at the same moment.
  const [[groupsErr, rowsReply], [streamErr, streamReply]] = ((await redis
    .pipeline()
    .xinfo('GROUPS', stream)
    .xinfo('STREAM', stream)
    .exec()) ?? [
    [new Error('no reply'), null],
    [new Error('no reply'), null],
  ]) as Array<[Error | null, unknown]>;
  const failure = groupsErr ?? streamErr;
  if (failure) {
    if (/no such key/i.test(failure.message)) return [];
    throw failure;
  }
  const counters = streamCounters(pairsToObject(streamReply as unknown[]));
  const groups = (rowsReply as unknown[][]).map((row) => {
    const info = pairsToObject(row);
    const lag = info['lag'];
    const lastDeliveredId = String(info['last-delivered-id']);
    return {
      name: String(info['name']),
      pending: Number(info['pending']),
      lag: trustedLag({ lag: lag === null || lag === undefined ? null : Number(lag), lastDeliveredId }, counters),
      lastDeliveredId,
      oldestPendingId: null as string | null,
    };
  });
  const withPending = groups.filter((g) => g.pending > 0);
  if (withPending.length > 0) {
    const pipeline = redis.pipeline();
    for (const group of withPending) pipeline.xpending(stream, group.name);
    const replies = (await pipeline.exec()) ?? [];
    withPending.forEach((group, i) => {
      const [err, summary] = replies[i] ?? [new Error('no reply')];
      if (err) throw err;
      group.oldestPendingId = (summary as XPendingSummary)[1];
    });
  }
  return groups;
}

/**
 * The first id that some group still needs: for every group, its oldest pending entry or, when
 * nothing is pending, the first entry after its last-delivered-id (entries after it were never
 * delivered). Trimming strictly below this id (`XTRIM MINID`) removes only entries every group
 * has acknowledged. Null when the stream has no groups (nothing to protect).
 */
export function safeFloor(groups: readonly GroupBacklog[]): string | null {
  let floor: string | null = null;
  for (const group of groups) {
    let needed = nextStreamId(group.lastDeliveredId);
    // Pending ids are normally below last-delivered-id, but XGROUP SETID can move it back: take both.
    if (group.oldestPendingId) needed = minStreamId(needed, group.oldestPendingId);
    floor = floor === null ? needed : minStreamId(floor, needed);
  }
  return floor;
}

/** Groups whose backlog (pending + lag) is larger than `maxLen`: a plain MAXLEN would delete their work. */
export function groupsAtRisk(groups: readonly GroupBacklog[], maxLen: number): GroupBacklog[] {
  // An unknown lag (null) cannot be compared; pending alone still proves a risk when it exceeds maxLen.
  return groups.filter((g) => g.pending + (g.lag ?? 0) > maxLen);
}
