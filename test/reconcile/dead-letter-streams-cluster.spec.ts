import { Cluster } from 'ioredis';
import { partitionStream } from 'nest-redis-streams';
import { findDeadLetterStreams } from 'nest-redis-streams/database';
import { unique } from '../support/helpers.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

// Issue 24 item 18 on a Redis Cluster: a partitioned stream's dead-letter streams live on several
// masters, and the CLI's reconcile finds them all (SCAN on each master).
describe('findDeadLetterStreams on a Redis Cluster of 3 masters', () => {
  let cluster: { startupNodes: Array<{ host: string; port: number }>; stop(): Promise<void> };
  let redis: Cluster;
  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    redis = new Cluster(cluster.startupNodes);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  }, 30_000);

  it("finds every partition's dead-letter stream, on whichever master it lives, in partition order", async () => {
    const stream = unique('cluster-dlqs');
    const partitions = Array.from({ length: 6 }, (_, p) => partitionStream(stream, p));
    // Partitions 0, 2, 3 and 5 parked something; a same-named key of another type and another
    // stream's partition are not theirs.
    for (const p of [5, 0, 3, 2]) await redis.xadd(`${partitions[p]}:dlq`, '*', 'event_id', `e-${p}`);
    await redis.set(`${partitions[1]}:dlq`, 'not a stream');
    await redis.xadd(`${partitionStream(`${stream}x`, 0)}:dlq`, '*', 'event_id', 'other');
    const ranges = (await redis.cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>;
    const masterOf = async (key: string) => {
      const slot = Number(await redis.cluster('KEYSLOT', key));
      const [, , [host, port]] = ranges.find(([from, to]) => slot >= from && slot <= to)!;
      return `${host}:${port}`;
    };
    const masters = new Set(await Promise.all([0, 2, 3, 5].map((p) => masterOf(`${partitions[p]}:dlq`))));
    expect(masters.size).toBeGreaterThan(1);
    expect(await findDeadLetterStreams(redis, stream, true)).toEqual([
      `{${stream}}:dlq`,
      ...[0, 2, 3, 5].map((p) => `${partitions[p]}:dlq`),
    ]);
  }, 30_000);
});
