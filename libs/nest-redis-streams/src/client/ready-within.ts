import type { Cluster, Redis } from 'ioredis';
import { OfflineTimeoutError } from './errors/offline-timeout.error.js';

/**
 * Resolves once `redis` is ready, at once when it is; fails with OfflineTimeoutError after
 * `timeoutMs`, before anything was sent. A write must not sit in ioredis' offline queue, to be
 * sent after its caller gave up.
 */
export async function readyWithin(redis: Redis | Cluster, timeoutMs: number): Promise<void> {
  if (redis.status === 'ready') return;
  const ready = await new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      clearTimeout(timer);
      redis.off('ready', onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    redis.on('ready', onReady);
  });
  if (!ready) throw new OfflineTimeoutError(`Redis was not reachable within ${timeoutMs} ms.`);
}
