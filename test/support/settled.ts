import type { Redis } from 'ioredis';
import { pendingCount, waitFor } from './helpers.js';

/** Resolves once the group has read every entry of the stream and holds none pending. */
export async function allSettled(redis: Redis, stream: string, group: string, lastId: string): Promise<void> {
  await waitFor(async () => {
    const groups = (await redis.xinfo('GROUPS', stream)) as unknown[][];
    const info = groups.find((g) => g[g.indexOf('name') + 1] === group);
    const delivered = info?.[info.indexOf('last-delivered-id') + 1];
    return delivered === lastId && (await pendingCount(redis, stream, group)) === 0;
  }, `group "${group}" to read and settle every entry`);
}
