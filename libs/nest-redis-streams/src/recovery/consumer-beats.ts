import type { Redis } from 'ioredis';
import { consumerBeatsKey } from '../keys/index.js';
import type { ScriptedRedis } from '../redis/scripts.js';

// Whether a consumer is alive, on any server: Redis 7.2+'s XINFO CONSUMERS `inactive` counts every
// read attempt, but older servers' `idle` counts only reads that returned entries, so a healthy
// consumer of a quiet stream looks gone there. Every instance beats on its reclaim round (a round
// it makes anyway, one more command in it); the console, the CLI and the idle-consumer cleanup
// read the beats, and a consumer with a live beat is never deleted (checked in the delete script).

/** How long a beat holds, from the reclaim period: three rounds may be missed before it runs out. */
export function beatTtlMs(reclaimIntervalMs: number): number {
  return reclaimIntervalMs > 0 ? Math.max(1_000, 3 * reclaimIntervalMs) : 0;
}

/** This consumer is alive for `ttlMs` more (Redis' clock); returns when its beat runs out. */
export function beat(redis: ScriptedRedis, stream: string, group: string, consumer: string, ttlMs: number): Promise<number> {
  return redis.nrsConsumerBeat(consumerBeatsKey(stream, group), consumer, ttlMs);
}

/** This consumer stopped: its beat ends now. */
export async function endBeat(redis: Redis, stream: string, group: string, consumer: string): Promise<void> {
  await redis.zrem(consumerBeatsKey(stream, group), consumer);
}

/** The live beats of a group's consumers on `stream`: how long each still holds (ms), at Redis' `now`. */
export async function readBeats(redis: Redis, stream: string, group: string, now: number): Promise<Map<string, number>> {
  const rows = await redis.zrange(consumerBeatsKey(stream, group), '0', '-1', 'WITHSCORES');
  const left = new Map<string, number>();
  for (let i = 0; i + 1 < rows.length; i += 2) {
    const ms = Number(rows[i + 1]) - now;
    if (ms > 0) left.set(rows[i], ms);
  }
  return left;
}
