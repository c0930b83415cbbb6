import { redisClient } from './helpers.js';

const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options?: { appendonly?: boolean }): Promise<{ url: string; stop(): Promise<void> }>;
};

/**
 * A private redis-server that a test fills and drains: `fill` sets maxmemory to 1 byte under
 * noeviction (every write that could grow it is refused with OOM), `drain` lifts the limit.
 * Stopped (drained first) by the suite's closers.
 */
export async function fillableRedis(closers: Array<() => Promise<unknown>>) {
  const own = await startRedis({ appendonly: false });
  closers.push(() => own.stop());
  const admin = redisClient(own.url);
  closers.push(() => admin.quit());
  await admin.config('SET', 'maxmemory-policy', 'noeviction');
  const fill = () => admin.config('SET', 'maxmemory', '1');
  const drain = () => admin.config('SET', 'maxmemory', '0');
  closers.push(drain); // runs before the server stops (closers run newest first)
  return { url: own.url, admin, fill, drain };
}
