import type { Redis } from 'ioredis';
import type { RedisStreamsServer } from '../server/redis-streams.server.js';
import type { ConsumerView } from '../consumer/index.js';
import { HEALTH_MESSAGES } from './health.constants.js';
import { collectStreamStatsBatch, type StreamStats, type StreamStatsTarget } from './stream-stats.js';
import { withTimeout } from './with-timeout.js';

/** Figures of one consumer of a server, or why they could not be read. */
export interface ConsumerStats {
  /** The consumer (stream, group, read-loop progress). */
  consumer: ConsumerView;
  /** Its figures, or the error that replaced them. */
  stats: StreamStats | Error;
}

/**
 * The commands connection of a listening server, if it can answer now. Checking the status
 * first keeps a probe from queueing commands in ioredis's offline queue while Redis is away.
 */
export function readyCommands(server: RedisStreamsServer): Redis {
  const redis = server.unwrap<Redis>();
  if (redis.status !== 'ready') throw new Error(HEALTH_MESSAGES.notConnected(redis.status));
  return redis;
}

/** The stream, group and dead-letter stream a consumer works on. */
export function statsTarget(consumer: ConsumerView): StreamStatsTarget {
  return { stream: consumer.stream, group: consumer.group, deadLetterStream: consumer.subscription.options.deadLetterStream };
}

/** Figures of every consumer of a server in one pipeline, bounded by `timeoutMs`. */
export async function collectServerStats(
  server: RedisStreamsServer,
  idleSampleSize: number,
  timeoutMs: number,
): Promise<ConsumerStats[]> {
  const redis = readyCommands(server);
  const consumers = [...server.getConsumers()];
  const stats = await withTimeout(
    collectStreamStatsBatch(redis, consumers.map(statsTarget), idleSampleSize),
    timeoutMs,
    `Redis (figures of ${consumers.length} stream/groups)`,
  );
  return consumers.map((consumer, i) => ({ consumer, stats: stats[i] }));
}
