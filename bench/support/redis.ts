// The private redis-server of a run, and checks that a consumer really acked what it claims.
import { createRequire } from 'node:module';
import { Redis } from 'ioredis';

interface RedisProcess {
  url: string;
  port: number;
  stop(): Promise<void>;
}

const require = createRequire(import.meta.url);
// Shared with the tests and the demo; from dist/bench/support back to scripts/lib.
const { startRedis } = require('../../../scripts/lib/redis-process.cjs') as {
  startRedis(options: { appendonly: boolean; log?: (message: string) => void }): Promise<RedisProcess>;
};

/** A fresh redis-server without persistence: the figures measure the transport, not the disk. */
export function startPrivateRedis(): Promise<RedisProcess> {
  return startRedis({ appendonly: false, log: (message) => console.log(message) });
}

/** Throws unless `group` has read at least `count` entries of `stream` and holds none unacked. */
export async function assertDrained(redis: Redis, stream: string, group: string, count: number): Promise<void> {
  // One transaction: a consumer still reading ahead must not move the figures between the two reads.
  const replies = await redis.multi().xinfo('GROUPS', stream).xpending(stream, group).exec();
  const [[, groups], [, [pending]]] = replies as [[null, Array<Array<string | number>>], [null, [number]]];
  const info = groups.map((row) => Object.fromEntries(pairs(row))).find((g) => g.name === group);
  const read = Number(info?.['entries-read']);
  // The transport may read ahead (prefetch) past `count`; those entries stay pending, unhandled.
  if (!(read >= count) || Number(pending) > read - count) {
    throw new Error(`Group "${group}" of "${stream}" read ${read} entries with ${pending} pending; expected ${count} acked.`);
  }
}

function* pairs(row: Array<string | number>): Generator<[string, string | number]> {
  for (let i = 0; i + 1 < row.length; i += 2) yield [String(row[i]), row[i + 1]];
}

/** Redis' own version string, for the machine description. */
export async function redisVersion(redis: Redis): Promise<string> {
  const info = await redis.info('server');
  return /redis_version:(\S+)/.exec(info)?.[1] ?? 'unknown';
}

/** CPU time the redis-server process has used so far, in ms (INFO cpu). */
export async function redisCpuMs(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const seconds = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return (seconds('used_cpu_user') + seconds('used_cpu_sys')) * 1_000;
}
