import type { Redis } from 'ioredis';
import { type StreamStats, collectStreamStatsBatch } from '../health/stream-stats.js';
import type { TrimTarget } from '../trim/retention-options.interface.js';
import { type GroupOwner, readGroupOwners } from './ownership.js';
import { readStreamGroups } from './stream-discovery.js';

/** One stream as the operator configured it (or as discovery found it). */
export interface StreamSetting {
  /** Stream key. */
  stream: string;
  /** Its dead-letter stream. @default `<stream>:dlq` (`{<stream>}:dlq` on a cluster) */
  deadLetterStream: string;
  /** The retention its producers use, shown beside the length (Redis does not record it). */
  retention?: TrimTarget;
  /** No write actions on this stream, whatever the global setting. */
  readOnly?: boolean;
}

/** Why a group needs a look. */
export type GroupBadge = 'no-consumers' | 'stalled';

/** A group's figures plus the badges derived from them. */
export interface GroupOverview extends StreamStats {
  badges: GroupBadge[];
  /**
   * Under `ownership: 'exclusive'`: the instance owning this (partition) stream in the group, its
   * generation and lease; null for shared consumption.
   */
  owner: GroupOwner | null;
  /** Entries the group has read (XINFO GROUPS `entries-read`, Redis 7.0+); null where unknown. */
  entriesRead: number | null;
  /** Set instead of figures when the group could not be read. */
  error?: string;
}

/** One stream in the overview. */
export interface StreamOverview {
  stream: string;
  length: number;
  retention: TrimTarget | null;
  deadLetterStream: string;
  readOnly: boolean;
  groups: GroupOverview[];
}

/** How the overview reads and judges. */
export interface OverviewOptions {
  /** Oldest pending idle time from which a group with pending entries is `stalled`. */
  stalledAfterMs: number;
  /** Pending rows sampled per group for the oldest idle time (see `collectStreamStats`). */
  idleSampleSize: number;
}

/**
 * The figures of every stream and group in two round trips: one pipeline with XLEN and XINFO
 * GROUPS of every stream, then one with `collectStreamStatsBatch` for every group (in a cluster,
 * one small pipeline per stream instead, in parallel), alongside it one HMGET per group of the
 * ownership hash beside the stream and one TIME. The cost grows with streams × groups, not with
 * stream length or pending entries, except for each group's dead-letter count (bounded).
 */
export async function readOverview(
  redis: Redis,
  settings: readonly StreamSetting[],
  options: OverviewOptions,
): Promise<StreamOverview[]> {
  const found = await readStreamGroups(
    redis,
    settings.map((s) => s.stream),
  );
  const targets = found.flatMap(({ stream, groups }, i) =>
    groups.map((group) => ({ stream, group, deadLetterStream: settings[i].deadLetterStream })),
  );
  const [stats, owners] = await Promise.all([
    collectStreamStatsBatch(redis, targets, options.idleSampleSize),
    readGroupOwners(redis, targets),
  ]);
  let next = 0;
  return found.map(({ stream, length, groups, entriesRead }, i) => ({
    stream,
    length,
    retention: settings[i].retention ?? null,
    deadLetterStream: settings[i].deadLetterStream,
    readOnly: settings[i].readOnly ?? false,
    groups: groups.map((_, g) => {
      const [result, owner] = [stats[next], owners[next++]];
      return result instanceof Error
        ? failedGroup(targets[next - 1], result)
        : { ...withBadges(result, options.stalledAfterMs), owner, entriesRead: entriesRead[g] ?? null };
    }),
  }));
}

function withBadges(stats: StreamStats, stalledAfterMs: number): Omit<GroupOverview, 'owner' | 'entriesRead'> {
  const badges: GroupBadge[] = [];
  if (stats.consumers === 0) badges.push('no-consumers');
  if (stats.pending > 0 && stats.oldestIdleMs >= stalledAfterMs) badges.push('stalled');
  return { ...stats, badges };
}

function failedGroup(target: { stream: string; group: string; deadLetterStream: string }, err: Error): GroupOverview {
  return {
    ...target,
    pending: 0,
    oldestIdleMs: 0,
    lag: null,
    deadLetters: 0,
    groupDeadLetters: null,
    consumers: 0,
    badges: [],
    owner: null,
    entriesRead: null,
    error: err.message,
  };
}
