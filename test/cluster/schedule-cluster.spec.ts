import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Cluster } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import {
  RedisStreamsClient,
  RedisStreamsContext,
  StreamOperations,
  StreamRecord,
  partitionOf,
  partitionStream,
} from 'nest-redis-streams';
import { startMicroservice, unique, waitFor } from '../support/helpers.js';
import { scheduleKeysOf } from '../../libs/nest-redis-streams/src/keys/index.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

const PARTITIONS = 6;

/** Delayed delivery on a Redis Cluster of 3 masters: each partition's schedule lives in its slot. */
describe('Delayed delivery on a Redis Cluster', () => {
  let cluster: { startupNodes: Array<{ host: string; port: number }>; stop(): Promise<void> };
  let redis: Cluster;
  const closers: Array<() => Promise<unknown>> = [];
  const connection = () => ({ cluster: cluster.startupNodes, clusterOptions: { redisOptions: { maxRetriesPerRequest: null } } });

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    redis = new Cluster(cluster.startupNodes);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  }, 60_000);
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  it('schedules each partition in its own slot (one script per slot) and delivers every entry once when due', async () => {
    const stream = unique('cl-delay');
    const seen: Array<{ customer: string; partition: string; at: number }> = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { partitions: PARTITIONS, concurrency: 8 })
      handle(@Payload() data: { customer: string }, @Ctx() ctx: RedisStreamsContext) {
        seen.push({ customer: data.customer, partition: ctx.getStream(), at: Date.now() });
      }
    }
    const { app } = await startMicroservice([Handlers], { connection: connection(), scheduleCheckMs: 100 });
    closers.push(() => app.close());
    const client = new RedisStreamsClient({ connection: connection(), partitions: { [stream]: PARTITIONS } });
    closers.push(() => client.close());
    const customers = Array.from({ length: 60 }, (_, i) => `customer-${i}`);

    const sentAt = Date.now();
    const ids = await Promise.all(
      customers.map((customer) =>
        lastValueFrom(client.emit(stream, new StreamRecord({ customer }, { partitionKey: customer, delayMs: 1_000 }))),
      ),
    );
    expect(new Set(ids).size).toBe(60);

    const slots = await Promise.all(
      Array.from({ length: PARTITIONS }, async (_, p) => {
        const partition = partitionStream(stream, p);
        const { due, entries } = scheduleKeysOf(partition);
        return Promise.all([partition, due, entries].map((key) => redis.cluster('KEYSLOT', key)));
      }),
    );
    for (const [partitionSlot, dueSlot, entriesSlot] of slots)
      expect([dueSlot, entriesSlot]).toEqual([partitionSlot, partitionSlot]);
    const ops = new StreamOperations(redis as never, { streams: [partitionStream(stream, 0)] });
    expect((await ops.scheduled(partitionStream(stream, 0))).count).toBe(
      customers.filter((c) => partitionOf(c, PARTITIONS) === 0).length,
    );

    await waitFor(() => seen.length === 60, 'all 60 delayed entries', 20_000);
    for (const { at } of seen) expect(at - sentAt).toBeGreaterThanOrEqual(1_000);
    for (const { customer, partition } of seen)
      expect(partition).toBe(partitionStream(stream, partitionOf(customer, PARTITIONS)));
    expect(new Set(seen.map((s) => s.customer)).size).toBe(60);
    expect(await client.cancelScheduled(stream, ids[0])).toBe(false);
  }, 60_000);
});
