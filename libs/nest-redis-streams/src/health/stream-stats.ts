import type { Redis } from 'ioredis';
import { isNoGroupError } from '../redis/errors/reply-errors.js';
import { isCluster } from '../redis/connection.factory.js';
import { streamCounters, trustedLag } from '../redis/group-lag.js';
import { pairsToObject, type XPendingRow, type XPendingSummary } from '../redis/replies.js';
import { parseDeadLetterCount, queueDeadLetterCount } from './dead-letter-count.js';
import { parseRetryWaits, queueRetryWaitProbe, queueRetryWaits, realIdles, timeOf } from '../recovery/retry-waits.js';
import { HEALTH_DEFAULTS, HEALTH_MESSAGES } from './health.constants.js';

/** The figures operators watch for one stream and group (see STREAMS.md "What operators watch"). */
export interface StreamStats {
  /** Stream key. */
  stream: string;
  /** Consumer group. */
  group: string;
  /** Entries delivered to the group and not yet acknowledged (XPENDING summary). */
  pending: number;
  /**
   * Longest idle time among the oldest `idleSampleSize` pending entries (by id); 0 when nothing
   * is pending. A lower bound: see `collectStreamStats`. Idle means since the entry's last real
   * delivery, renewal or failure: an entry waiting for a retry's back-off counts from its
   * failure, not from the backdated delivery time the back-off puts in the PEL (see
   * recovery/retry-waits.ts).
   */
  oldestIdleMs: number;
  /**
   * Entries not yet delivered to the group: XINFO GROUPS `lag`, checked against the stream's ids
   * (see `trustedLag`: 0 when the group has everything, even where Redis' counter went stale after
   * a failover); null when it cannot be known.
   */
  lag: number | null;
  /** Dead-letter stream of the group's handler. */
  deadLetterStream: string;
  /** Entries in the dead-letter stream, every group's together (XLEN). */
  deadLetters: number;
  /**
   * Entries of this group in the dead-letter stream; null when the stream holds more than
   * `HEALTH_DEFAULTS.deadLetterCountLimit` entries and was not counted.
   */
  groupDeadLetters: number | null;
  /** Consumers known to the group, live or not (XINFO GROUPS `consumers`). */
  consumers: number;
}

/** One stream/group to measure. */
export interface StreamStatsTarget {
  /** Stream key. */
  stream: string;
  /** Consumer group. */
  group: string;
  /** Dead-letter stream whose length is reported. */
  deadLetterStream: string;
}

/** `StreamStats` plus the stream's length, which metrics export and health does not judge. */
export interface SampledStreamStats {
  /** The group's figures, or why they could not be read. */
  stats: StreamStats | Error;
  /** Entries in the stream (XINFO STREAM `length`); null when the stream could not be read. */
  streamLength: number | null;
}

/** Commands queued per target; the replies are read back in the same order. */
const COMMANDS_PER_TARGET = 7;

/**
 * Reads the figures of one stream and group in one round trip (two while entries wait out a retry
 * back-off): XPENDING (summary), the first
 * `idleSampleSize` rows of the extended XPENDING, XINFO GROUPS, the dead-letter stream's length and
 * this group's share of it (counted in Redis, see dead-letter-count.ts), XINFO STREAM (length, ids),
 * Redis' TIME and whether entries wait for a retry; only then does the second read the real times
 * of the sampled entries that wait (recovery/retry-waits.ts).
 *
 * `oldestIdleMs` is exact only when at most `idleSampleSize` entries are pending. Past that it is
 * the longest idle among the oldest ids: a stuck entry usually is among them, but one whose idle
 * time another consumer's retry or lease renewal keeps resetting can hide a newer, idler one.
 * Reading the whole PEL instead would cost O(pending) per check; this stays O(log n + sample).
 *
 * @throws when the stream or group does not exist, or Redis fails.
 */
export async function collectStreamStats(
  redis: Redis,
  stream: string,
  group: string,
  deadLetterStream: string,
  idleSampleSize: number = HEALTH_DEFAULTS.idleSampleSize,
): Promise<StreamStats> {
  const [stats] = await collectStreamStatsBatch(redis, [{ stream, group, deadLetterStream }], idleSampleSize);
  if (stats instanceof Error) throw stats;
  return stats;
}

/**
 * `collectStreamStats` for many stream/groups in a single pipeline (one round trip in all). A
 * target whose stream or group is missing gets an Error in its place; the others still report.
 */
export async function collectStreamStatsBatch(
  redis: Redis,
  targets: readonly StreamStatsTarget[],
  idleSampleSize: number = HEALTH_DEFAULTS.idleSampleSize,
): Promise<Array<StreamStats | Error>> {
  return (await sampleStreamStatsBatch(redis, targets, idleSampleSize)).map(({ stats }) => stats);
}

/** `collectStreamStatsBatch` that also returns each stream's length (from the same XINFO STREAM). */
export async function sampleStreamStatsBatch(
  redis: Redis,
  targets: readonly StreamStatsTarget[],
  idleSampleSize: number = HEALTH_DEFAULTS.idleSampleSize,
): Promise<SampledStreamStats[]> {
  if (targets.length === 0) return [];
  // A cluster pipeline must stay within one slot: one pipeline per target there, all in parallel.
  const batches = isCluster(redis) ? targets.map((t) => [t]) : [targets];
  const results = await Promise.all(batches.map((batch) => statsPipeline(redis, batch, idleSampleSize)));
  return results.flat();
}

async function statsPipeline(
  redis: Redis,
  targets: readonly StreamStatsTarget[],
  idleSampleSize: number,
): Promise<SampledStreamStats[]> {
  const pipeline = redis.pipeline();
  for (const { stream, group, deadLetterStream } of targets) {
    pipeline.xpending(stream, group);
    pipeline.xpending(stream, group, '-', '+', idleSampleSize);
    pipeline.xinfo('GROUPS', stream);
    queueDeadLetterCount(pipeline, deadLetterStream, group, HEALTH_DEFAULTS.deadLetterCountLimit);
    pipeline.xinfo('STREAM', stream);
    queueRetryWaitProbe(pipeline, stream, group);
  }
  const replies = (await pipeline.exec()) ?? [];
  const sampled = targets.map((target, i) =>
    parseStats(target, replies.slice(i * COMMANDS_PER_TARGET, (i + 1) * COMMANDS_PER_TARGET)),
  );
  await correctRetryWaits(redis, sampled);
  return sampled.map(({ stats, streamLength }) => ({ stats, streamLength }));
}

/** A target's figures, with what the retry-wait correction needs. */
interface ParsedStats extends SampledStreamStats {
  /** The sampled PEL rows, Redis' time of the read, and whether any entry waits for a retry. */
  idle?: SampledIdle;
}

interface SampledIdle {
  stats: StreamStats;
  rows: XPendingRow[];
  now: number | null;
  waiting: boolean;
}

/**
 * Sets `oldestIdleMs` of the targets where entries wait for a retry from their real times (one
 * pipeline for all of them); where the records cannot be read, the PEL's idle times stand.
 */
async function correctRetryWaits(redis: Redis, sampled: ParsedStats[]): Promise<void> {
  const waiting = sampled.flatMap(({ idle }) => (idle?.waiting && idle.rows.length > 0 ? [idle] : []));
  if (waiting.length === 0) return;
  const pipeline = redis.pipeline();
  const idsOf = (idle: SampledIdle) => idle.rows.map(([id]) => id);
  for (const idle of waiting) queueRetryWaits(pipeline, idle.stats.stream, idle.stats.group, idsOf(idle));
  const replies = (await pipeline.exec().catch(() => null)) ?? [];
  waiting.forEach((idle, i) => {
    const waits = parseRetryWaits(idsOf(idle), replies[i] ?? [new Error('no reply'), null]);
    idle.stats.oldestIdleMs = realIdles(idle.rows, idle.now, waits).reduce((max, { idleMs }) => Math.max(max, idleMs), 0);
  });
}

function parseStats(target: StreamStatsTarget, replies: Array<[Error | null, unknown]>): ParsedStats {
  const [streamError, streamInfo] = replies[STREAM_INFO] ?? [new Error('no reply'), null];
  const streamLength = streamError ? null : Number(pairsToObject(streamInfo as unknown[]).length);
  const stats = parseGroupStats(target, replies);
  if (stats instanceof Error) return { stats, streamLength };
  // The probe's replies may be errors (an ACL without TIME or ZCARD): the PEL's idle times stand.
  const [timeReply, waitingReply] = replies.slice(STREAM_INFO + 1);
  const waiting = !waitingReply[0] && Number(waitingReply[1]) > 0;
  const idle = { stats, rows: replies[1][1] as XPendingRow[], now: timeOf(timeReply), waiting };
  return { stats, streamLength, idle };
}

/** Where XINFO STREAM's reply is among a target's; the retry-wait probe's two follow it. */
const STREAM_INFO = 4;

function parseGroupStats(target: StreamStatsTarget, replies: Array<[Error | null, unknown]>): StreamStats | Error {
  const { stream, group } = target;
  if (replies.length < COMMANDS_PER_TARGET) return new Error(HEALTH_MESSAGES.statsFailed(stream, group, 'no reply'));
  const failure = replies.slice(0, STREAM_INFO + 1).find(([err]) => err)?.[0];
  if (failure) {
    // XPENDING says NOGROUP for a missing group or key; XINFO GROUPS says "no such key".
    if (isNoGroupError(failure) || /no such key/i.test(failure.message)) return new Error(HEALTH_MESSAGES.noGroup(stream, group));
    return new Error(HEALTH_MESSAGES.statsFailed(stream, group, failure.message));
  }
  const [summary, rows, groups, deadLetterReply, streamInfo] = replies.slice(0, STREAM_INFO + 1).map(([, value]) => value) as [
    XPendingSummary,
    XPendingRow[],
    unknown[][],
    unknown,
    unknown[],
  ];
  const deadLetters = parseDeadLetterCount(deadLetterReply);
  const info = groups.map(pairsToObject).find((g) => g.name === group);
  if (!info) return new Error(HEALTH_MESSAGES.noGroup(stream, group));
  return {
    ...target,
    pending: Number(summary[0]),
    oldestIdleMs: rows.reduce((max, [, , idleMs]) => Math.max(max, Number(idleMs)), 0),
    // Redis < 7 has no lag field; Redis 7 answers nil when deletions make it unknowable, and a
    // wrong figure after a failover or an AOF reload (stale entries-read): see trustedLag.
    lag: trustedLag(
      {
        lag: info.lag === null || info.lag === undefined ? null : Number(info.lag),
        lastDeliveredId: String(info['last-delivered-id']),
      },
      streamCounters(pairsToObject(streamInfo)),
    ),
    deadLetters: deadLetters.length,
    groupDeadLetters: deadLetters.ofGroup,
    consumers: Number(info.consumers),
  };
}
