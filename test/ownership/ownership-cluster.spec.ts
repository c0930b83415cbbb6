import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Cluster } from 'ioredis';
import { NonRetryableError, RedisStreamsContext, type RedisStreamsServer, partitionStream } from 'nest-redis-streams';
import { partitionOwnerKey, slotOf } from '../../libs/nest-redis-streams/src/keys/index.js';
import { startMicroservice, unique, waitFor } from '../support/helpers.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

const PARTITIONS = 6;
const owned = (server: RedisStreamsServer) => server.getOwnership()[0]?.owned ?? [];

/** Exclusive ownership on a Redis Cluster of 3 masters: every fenced script stays in one slot. */
describe('exclusive partition ownership on a Redis Cluster', () => {
  let cluster: { startupNodes: Array<{ host: string; port: number }>; stop(): Promise<void> };
  let redis: Cluster;
  const closers: Array<() => Promise<unknown>> = [];
  const connection = () => ({ cluster: cluster.startupNodes, clusterOptions: { redisOptions: { maxRetriesPerRequest: null } } });

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    redis = new Cluster(cluster.startupNodes);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  }, 60_000);
  afterAll(async () => {
    while (closers.length) await closers.pop()!();
    redis?.disconnect();
    await cluster?.stop();
  });

  it('two instances share the partitions, run each entry once, park a poison entry and hand everything over on close', async () => {
    const stream = unique('cl-own');
    for (let p = 0; p < PARTITIONS; p++) {
      const key = partitionStream(stream, p);
      expect(slotOf(partitionOwnerKey(key, 'g'))).toBe(slotOf(key));
    }
    const runs: Array<{ consumer: string; n: number }> = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { group: 'g', partitions: PARTITIONS, ownership: 'exclusive', ownershipLeaseMs: 600 })
      handle(@Payload() data: { n: string }, @Ctx() ctx: RedisStreamsContext) {
        if (data.n === 'poison') throw new NonRetryableError('poison entry');
        runs.push({ consumer: ctx.getConsumer(), n: Number(data.n) });
      }
    }
    const a = await startMicroservice([Handlers], { connection: connection(), consumer: 'a' });
    closers.push(() => a.app.close());
    const b = await startMicroservice([Handlers], { connection: connection(), consumer: 'b' });
    closers.push(() => b.app.close());
    await waitFor(() => owned(a.server).length === 3 && owned(b.server).length === 3, 'partitions shared 3/3');
    for (let n = 0; n < 60; n++) await redis.xadd(partitionStream(stream, n % PARTITIONS), '*', 'n', String(n));
    await redis.xadd(partitionStream(stream, 0), '*', 'n', 'poison');
    await waitFor(() => runs.length >= 60, 'all 60 entries handled');
    expect(new Set(runs.map((r) => r.n)).size).toBe(60);
    await waitFor(async () => (await redis.xlen(`${partitionStream(stream, 0)}:dlq`)) === 1, 'the poison entry parked');
    await a.app.close();
    await waitFor(() => owned(b.server).length === PARTITIONS, 'b owns every partition');
    for (let n = 60; n < 72; n++) await redis.xadd(partitionStream(stream, n % PARTITIONS), '*', 'n', String(n));
    await waitFor(() => runs.length >= 72, 'the entries after the hand-over handled');
    expect(runs.slice(60).every((r) => r.consumer === 'b')).toBe(true);
    expect(runs).toHaveLength(72);
  }, 30_000);
});
