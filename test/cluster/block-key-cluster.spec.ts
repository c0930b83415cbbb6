import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Cluster } from 'ioredis';
import { StreamOperations, partitionOf, partitionStream } from 'nest-redis-streams';
import { blockedKeysKey, heldEntriesKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { startMicroservice, unique, waitFor } from '../support/helpers.js';
import { masterPortOf } from '../support/cluster-masters.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

const PARTITIONS = 3;

/** onDeadLetter: 'block-key' on a Redis Cluster of 3 masters: every script's keys share their partition's slot. */
describe("onDeadLetter: 'block-key' on a Redis Cluster", () => {
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

  const masterOf = (key: string) => masterPortOf(redis, key);

  it('blocks, holds and releases keys of a partitioned stream on all three masters, in order', async () => {
    let stream = '';
    for (let attempt = 0; !stream; attempt++) {
      const candidate = unique(`cl-block-${attempt}`);
      const owners = await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => masterOf(partitionStream(candidate, p))));
      if (new Set(owners).size === 3) stream = candidate;
    }
    // One ordering key per partition, so each master holds one blocked key.
    const keys: string[] = [];
    for (let i = 0; keys.length < PARTITIONS; i++) {
      const key = `acct-${i}`;
      if (!keys.some((k) => partitionOf(k, PARTITIONS) === partitionOf(key, PARTITIONS))) keys.push(key);
    }
    const where = (key: string) => partitionStream(stream, partitionOf(key, PARTITIONS));
    const failures = new Set(keys.map((k) => `${k}:1`));
    const done: string[] = [];
    @Controller()
    class Ledger {
      @EventPattern(stream, {
        partitions: PARTITIONS,
        orderingKey: 'k',
        onDeadLetter: 'block-key',
        concurrency: 8,
        maxDeliveries: 1,
      })
      handle(@Payload() data: { k: string; n: string }) {
        if (failures.has(`${data.k}:${data.n}`)) throw new Error(`${data.k}:${data.n} is poison`);
        done.push(`${data.k}:${data.n}`);
      }
    }
    const { app } = await startMicroservice([Ledger], { connection: connection(), reclaimIntervalMs: 50, retryBackoffMs: 10 });
    closers.push(() => app.close());
    for (const n of ['1', '2', '3']) for (const k of keys) await redis.xadd(where(k), '*', 'k', k, 'n', n);

    const blockOf = async (key: string) => {
      const raw = await redis.hget(blockedKeysKey(where(key), 'nest'), key);
      return raw === null ? null : (JSON.parse(raw) as { state: string; deadLetter: string });
    };
    const held = (key: string) => redis.xlen(heldEntriesKey(where(key), 'nest', key));
    for (const key of keys) {
      await waitFor(async () => (await blockOf(key))?.state === 'parked', `key ${key} parked`);
      await waitFor(async () => (await held(key)) === 2, `two entries of ${key} held`);
    }
    expect(done).toEqual([]);

    failures.clear();
    const ops = new StreamOperations(redis as never, {
      streams: Array.from({ length: PARTITIONS }, (_, p) => partitionStream(stream, p)),
    });
    const [discarded, ...redriven] = keys;
    await ops.discard('tester', where(discarded), (await blockOf(discarded))!.deadLetter);
    for (const key of redriven) await ops.redrive('tester', where(key), (await blockOf(key))!.deadLetter);

    await waitFor(() => done.length === 2 + 3 * redriven.length, 'the released and re-driven entries handled');
    expect(done.filter((name) => name.startsWith(`${discarded}:`))).toEqual([`${discarded}:2`, `${discarded}:3`]);
    for (const key of redriven)
      expect(done.filter((name) => name.startsWith(`${key}:`))).toEqual([1, 2, 3].map((n) => `${key}:${n}`));
    for (const key of keys)
      await waitFor(async () => (await blockOf(key)) === null && (await held(key)) === 0, `key ${key} free`);
  }, 60_000);

  it("makes an operator's park of a failing blocker its key's blocker on the partition's master: its discard releases the key", async () => {
    const stream = unique('cl-block-park');
    const key = 'acct-1';
    const where = partitionStream(stream, partitionOf(key, PARTITIONS));
    const done: string[] = [];
    @Controller()
    class Ledger {
      @EventPattern(stream, { partitions: PARTITIONS, orderingKey: 'k', onDeadLetter: 'block-key', maxDeliveries: 50 })
      handle(@Payload() data: { k: string; n: string }) {
        if (data.n === '1') throw new Error(`${data.k}:1 is poison`);
        done.push(`${data.k}:${data.n}`);
      }
    }
    // A failed entry waits 30 s for its retry: it stays the key's `failing` blocker meanwhile.
    const options = { connection: connection(), reclaimIntervalMs: 50, retryBackoffMs: 30_000, minIdleTimeMs: 30_000 };
    const { app } = await startMicroservice([Ledger], options);
    closers.push(() => app.close());
    const first = (await redis.xadd(where, '*', 'k', key, 'n', '1'))!;
    const blockOf = async () => {
      const raw = await redis.hget(blockedKeysKey(where, 'nest'), key);
      return raw === null ? null : (JSON.parse(raw) as { state: string; entry: string; deadLetter: string });
    };
    await waitFor(async () => (await blockOf())?.state === 'failing', 'the key failing');
    await redis.xadd(where, '*', 'k', key, 'n', '2');
    await waitFor(async () => (await redis.xlen(heldEntriesKey(where, 'nest', key))) === 1, 'entry 2 held');

    const ops = new StreamOperations(redis as never, { streams: [where] });
    const { deadLetterId } = await ops.park('tester', where, 'nest', first);
    expect(await blockOf()).toMatchObject({ state: 'parked', entry: first, deadLetter: deadLetterId });
    expect(await ops.discard('tester', where, deadLetterId)).toMatchObject({ released: { key } });
    await waitFor(() => done.includes(`${key}:2`), 'entry 2 handled');
    await waitFor(async () => (await blockOf()) === null, 'the key free');
  }, 60_000);
});
