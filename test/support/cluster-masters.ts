import type { Cluster } from 'ioredis';

/** Port of the master that serves `key`'s slot, as the cluster reports it now. */
export async function masterPortOf(redis: Cluster, key: string): Promise<number> {
  const slot = Number(await redis.cluster('KEYSLOT', key));
  const slots = (await redis.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>;
  return slots.find(([from, to]) => slot >= from && slot <= to)![2][1];
}
