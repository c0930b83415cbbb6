import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Cluster, Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { scheduleKeysOf } from '../../libs/nest-redis-streams/src/keys/index.js';
import {
  DeadLetterService,
  StreamOperations,
  RedisIdempotencyStore,
  collectServerStats,
  RedisStreamsClient,
  RedisStreamsContext,
  StreamRecord,
  partitionOf,
  partitionStream,
} from 'nest-redis-streams';
import { claimEpochKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { startMicroservice, unique, waitFor } from '../support/helpers.js';
import { masterPortOf } from '../support/cluster-masters.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

const PARTITIONS = 6;

/** A Redis Cluster of 3 masters and 3 replicas on loopback ports, started by the test. */
describe('Redis Cluster', () => {
  let cluster: {
    startupNodes: Array<{ host: string; port: number }>;
    masters(): Array<{ port: number }>;
    killMaster(n: unknown): Promise<void>;
    stop(): Promise<void>;
  };
  let redis: Cluster;
  const closers: Array<() => Promise<unknown>> = [];
  const connection = () => ({ cluster: cluster.startupNodes, clusterOptions: { redisOptions: { maxRetriesPerRequest: null } } });

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 1 });
    redis = new Cluster(cluster.startupNodes);
    // Commands sent while the client still maps the slots can fail with "Connection is closed".
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

  it('consumes and acks every partition, spread over all three masters, with per-key order kept', async () => {
    // Partition keys are tagged with the stream name, so where partitions land depends on the name:
    // take the first name whose partitions cover all three masters (the point of partitioning).
    let stream = '';
    for (let attempt = 0; !stream; attempt++) {
      const candidate = unique(`cl-orders-${attempt}`);
      const owners = await Promise.all(Array.from({ length: PARTITIONS }, (_, p) => masterOf(partitionStream(candidate, p))));
      if (new Set(owners).size === 3) stream = candidate;
    }
    const byKey = new Map<string, number[]>();
    let handled = 0;
    @Controller()
    class Handlers {
      @EventPattern(stream, { partitions: PARTITIONS, concurrency: 32, prefetchCount: 256, orderingKey: 'k' })
      async handle(@Payload() data: { k: string; seq: string }) {
        if (Number(data.seq) % 7 === 0) await new Promise((r) => setImmediate(r));
        byKey.set(data.k, [...(byKey.get(data.k) ?? []), Number(data.seq)]);
        handled++;
      }
    }
    const { app, server } = await startMicroservice([Handlers], { connection: connection() });
    closers.push(() => app.close());
    const partitions = Array.from({ length: PARTITIONS }, (_, p) => partitionStream(stream, p));
    const owners = new Set(await Promise.all(partitions.map(masterOf)));
    expect(owners.size).toBe(3);

    const total = 10_000;
    for (let from = 0; from < total; from += 500) {
      // One pipeline per partition: a cluster pipeline must stay within one slot.
      const batches = new Map<number, ReturnType<Cluster['pipeline']>>();
      for (let seq = from; seq < from + 500; seq++) {
        const k = `customer-${seq % 50}`;
        const p = partitionOf(k, PARTITIONS);
        if (!batches.has(p)) batches.set(p, redis.pipeline());
        batches.get(p)!.xadd(partitionStream(stream, p), '*', 'k', k, 'seq', String(seq));
      }
      await Promise.all([...batches.values()].map((b) => b.exec()));
    }
    await waitFor(() => handled === total, `${total} entries`, 60_000);
    for (const seqs of byKey.values()) expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    await waitFor(async () => {
      const pending = await Promise.all(partitions.map(async (s) => Number(((await redis.xpending(s, 'nest')) as [number])[0])));
      return pending.every((n) => n === 0);
    }, 'every partition acked');
    // The health figures come from one slot-safe pipeline per partition.
    const stats = await collectServerStats(server, 100, 5_000);
    expect(stats.map(({ stats: st }) => (st instanceof Error ? st.message : [st.stream, st.pending, st.lag]))).toEqual(
      partitions.map((p) => [p, 0, 0]),
    );
  }, 90_000);

  it('emits through the client to the partition of each key, batched per slot, and the server consumes them all', async () => {
    const stream = unique('cl-client');
    const seen: Array<[string, string]> = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { partitions: PARTITIONS, concurrency: 8 })
      handle(@Payload() data: { customer: string }, @Ctx() ctx: RedisStreamsContext) {
        seen.push([data.customer, ctx.getStream()]);
      }
    }
    const { app } = await startMicroservice([Handlers], { connection: connection() });
    closers.push(() => app.close());
    const client = new RedisStreamsClient({ connection: connection(), partitions: { [stream]: PARTITIONS } });
    closers.push(() => client.close());
    const customers = Array.from({ length: 200 }, (_, i) => `customer-${i % 40}`);
    // Concurrent emits of one event-loop turn: one pipeline per slot.
    await Promise.all(
      customers.map((customer) => lastValueFrom(client.emit(stream, new StreamRecord({ customer }, { partitionKey: customer })))),
    );
    await waitFor(() => seen.length === 200, 'all 200 entries');
    for (const [customer, partition] of seen) expect(partition).toBe(partitionStream(stream, partitionOf(customer, PARTITIONS)));
  }, 30_000);

  it('delayed emits: schedules each partition in its own slot (one script per slot) and delivers every entry once when due', async () => {
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

  it("reclaims a dead consumer's entry and dead-letters a poison entry on the same shard", async () => {
    const stream = unique('cl-recovery');
    const seen: Array<[string, number]> = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { maxDeliveries: 2 })
      handle(@Payload() data: { kind: string }, @Ctx() ctx: RedisStreamsContext) {
        seen.push([data.kind, ctx.getDeliveryCount()]);
        if (data.kind === 'poison') throw new Error('cannot process');
      }
    }
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    await redis.xadd(stream, '*', 'kind', 'orphan');
    await redis.xreadgroup('GROUP', 'nest', 'dead-pod', 'COUNT', 1, 'STREAMS', stream, '>');
    const { app } = await startMicroservice([Handlers], {
      connection: connection(),
      minIdleTimeMs: 200,
      reclaimIntervalMs: 50,
      retryBackoffMs: 10,
    });
    closers.push(() => app.close());
    await redis.xadd(stream, '*', 'kind', 'poison');
    const dlq = DeadLetterService.streamFor(stream, true);
    expect(dlq).toBe(`{${stream}}:dlq`);
    await waitFor(
      async () => (await redis.xlen(dlq)) === 1 && seen.some(([kind]) => kind === 'orphan'),
      'the dead letter and the reclaimed orphan',
      10_000,
    );
    expect(seen).toEqual(
      expect.arrayContaining([
        ['orphan', 2],
        ['poison', 1],
        ['poison', 2],
      ]),
    );
    // The orphan's ack may still be on its way (acks are batched): wait for it, bounded.
    await waitFor(async () => Number(((await redis.xpending(stream, 'nest')) as [number])[0]) === 0, 'the acks');

    // The operator path and the idempotency store work on the cluster connection too.
    const deadLetters = new DeadLetterService(redis);
    const [letter] = (await deadLetters.list(dlq)).items;
    expect(letter).toMatchObject({ reason: 'max-deliveries', stream, deliveries: 2 });
    expect(await deadLetters.redrive(dlq, letter.id)).toEqual(expect.any(String));
    expect(await deadLetters.inspect(dlq, letter.id)).toBeNull();
    const store = new RedisIdempotencyStore(redis, `{${stream}}:idem:`);
    expect(await store.begin('evt-1', 1_000)).toBe('new');
    await store.complete('evt-1', 60_000);
    expect(await store.begin('evt-1', 1_000)).toBe('done');
  }, 30_000);

  it("keeps the claim epoch in its stream's slot: the cheap ack and a counted claim run as one-node scripts", async () => {
    const scripted = withStreamScripts(redis as unknown as Redis);
    for (const stream of [unique('cl-epoch'), `${unique('cl-epoch')}:{tagged}`]) {
      const key = claimEpochKey(stream, 'g');
      expect(await masterOf(key)).toBe(await masterOf(stream));
      await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
      const ids = [(await redis.xadd(stream, '*', 'n', '1'))!, (await redis.xadd(stream, '*', 'n', '2'))!];
      await redis.xreadgroup('GROUP', 'g', 'me', 'STREAMS', stream, '>');
      const [epoch, acked] = await scripted.nrsAckUnderEpoch(stream, key, 'g', 'me', ids[0], ids[0], '', ids[0]);
      expect(Number(acked)).toBe(1);
      await scripted.nrsClaimCounted(stream, key, 'g', 'other', ids[1]);
      const [, none, ...notAcked] = await scripted.nrsAckUnderEpoch(stream, key, 'g', 'me', ids[1], ids[1], epoch, ids[1]);
      expect([Number(none), notAcked]).toEqual([0, [ids[1]]]);
    }
  });

  it("dead-letters a poison entry of a partition into that partition's dead-letter stream, on its slot", async () => {
    const stream = unique('cl-part-dlq');
    @Controller()
    class Handlers {
      @EventPattern(stream, { partitions: 3, maxDeliveries: 1 })
      handle() {
        throw new Error('cannot process');
      }
    }
    const { app } = await startMicroservice([Handlers], { connection: connection(), retryBackoffMs: 10 });
    closers.push(() => app.close());
    const partition = partitionStream(stream, 2);
    await redis.xadd(partition, '*', 'kind', 'poison');
    // The dead-letter script writes both keys atomically: it only runs when they share a slot.
    const dlq = `${partition}:dlq`;
    await waitFor(async () => (await redis.xlen(dlq)) === 1, "the dead letter in the partition's dead-letter stream");
    expect(Number(((await redis.xpending(partition, 'nest')) as [number])[0])).toBe(0);
  }, 30_000);

  it("follows MOVED/ASK while a partition's slot is migrated to another master under load", async () => {
    const stream = unique('cl-reshard');
    const consumed = new Set<string>();
    @Controller()
    class Handlers {
      @EventPattern(stream, { partitions: 2, concurrency: 8 })
      handle(@Payload() data: { seq: string }) {
        consumed.add(data.seq);
      }
    }
    const { app } = await startMicroservice([Handlers], { connection: connection() });
    closers.push(() => app.close());
    const key = partitionStream(stream, 0);
    const slot = Number(await redis.cluster('KEYSLOT', key));
    const sourcePort = await masterOf(key);
    const nodes = (cluster as unknown as { nodes: Array<{ port: number }> }).nodes;
    const admin = async (port: number, ...args: Array<string | number>) => {
      const node = new Redis(port, '127.0.0.1');
      try {
        return await node.call(args[0] as string, ...args.slice(1));
      } finally {
        node.disconnect();
      }
    };
    const targetPort = (await Promise.all(cluster.masters().map(async (m) => m.port))).find((p) => p !== sourcePort)!;
    const sourceId = String(await admin(sourcePort, 'CLUSTER', 'MYID'));
    const targetId = String(await admin(targetPort, 'CLUSTER', 'MYID'));
    let seq = 0;
    const produced: string[] = [];
    let producing = true;
    const produce = (async () => {
      while (producing) {
        const s = String(seq++);
        await redis.xadd(partitionStream(stream, Number(s) % 2), '*', 'seq', s);
        produced.push(s);
        if (Number(s) % 10 === 0) await new Promise((r) => setTimeout(r, 2));
      }
    })();
    await waitFor(() => consumed.size > 200, 'consumption before the migration');
    // The steps of `redis-cli --cluster reshard`, for exactly the partition's slot.
    // Valkey 8+ replicates each SETSLOT to the replicas before applying it, and fails after 2 s when
    // they lag (a busy machine). Every step is idempotent, so the masters retry until they take it.
    const setSlot = (port: number, ...args: string[]) =>
      waitFor(
        async () => (await admin(port, 'CLUSTER', 'SETSLOT', slot, ...args)) === 'OK',
        `node ${port} to take SETSLOT ${args.join(' ')}`,
      );
    await setSlot(targetPort, 'IMPORTING', sourceId);
    await setSlot(sourcePort, 'MIGRATING', targetId);
    for (;;) {
      const keys = (await admin(sourcePort, 'CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
      if (keys.length === 0) break;
      await admin(sourcePort, 'MIGRATE', '127.0.0.1', targetPort, '', 0, 5_000, 'KEYS', ...keys);
    }
    // The new owner first, then the old one, then the rest, as redis-cli does. A master left importing
    // would answer MOVED back to the old owner: a redirection loop. A replica that refuses learns the
    // owner by gossip.
    await setSlot(targetPort, 'NODE', targetId);
    await setSlot(sourcePort, 'NODE', targetId);
    for (const node of nodes.filter((n) => n.port !== targetPort && n.port !== sourcePort)) {
      await admin(node.port, 'CLUSTER', 'SETSLOT', slot, 'NODE', targetId).catch(() => undefined);
    }
    try {
      expect(await masterOf(key)).toBe(targetPort);
      const afterMove = produced.length;
      await waitFor(() => produced.length > afterMove + 200, 'production after the migration');
    } finally {
      producing = false;
      await produce;
    }
    await waitFor(() => produced.every((s) => consumed.has(s)), 'every entry to be consumed', 30_000);
    await waitFor(async () => Number(((await redis.xpending(key, 'nest')) as [number])[0]) === 0, 'the moved partition acked');
  }, 90_000);

  it('survives a master failover: consumption resumes, and the loss window is measured', async () => {
    const stream = unique('cl-failover');
    const consumed = new Set<string>();
    @Controller()
    class Handlers {
      @EventPattern(stream, { partitions: 3, concurrency: 8 })
      handle(@Payload() data: { seq: string }) {
        consumed.add(data.seq);
      }
    }
    const { app, server } = await startMicroservice([Handlers], { connection: connection() });
    closers.push(() => app.close());
    const producer = new Cluster(cluster.startupNodes, {
      redisOptions: { maxRetriesPerRequest: 50 },
      retryDelayOnFailover: 200,
      maxRedirections: 64,
    });
    closers.push(async () => producer.disconnect());
    const produced: string[] = [];
    let seq = 0;
    let producing = true;
    const produce = (async () => {
      while (producing) {
        const s = String(seq++);
        const key = partitionStream(stream, Number(s) % 3);
        // Count an entry as produced only once Redis answered with its id; retry otherwise.
        for (;;) {
          try {
            await producer.xadd(key, '*', 'seq', s);
            produced.push(s);
            break;
          } catch {
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        if (Number(s) % 20 === 0) await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await waitFor(() => consumed.size > 300, 'consumption before the failover', 20_000);
    const victimPort = await masterOf(partitionStream(stream, 0));
    const victim = (cluster as unknown as { nodes: Array<{ port: number }> }).nodes.find((n) => n.port === victimPort);
    const killedAt = produced.length;
    await cluster.killMaster(victim);
    const afterFailover = produced.length;
    await waitFor(() => produced.length > afterFailover + 300, 'production after the failover', 30_000);
    producing = false;
    await produce;
    await waitFor(
      () => produced.filter((s) => Number(s) >= Number(produced[afterFailover])).every((s) => consumed.has(s)),
      'every entry produced after the failover to be consumed',
      30_000,
    );
    const lost = produced.filter((s) => !consumed.has(s));
    // Replication is asynchronous: entries acknowledged by the old master just before it died may
    // not have reached its replica. Report the window; everything after the failover must arrive.
    process.stdout.write(
      `failover: produced ${produced.length}, consumed ${consumed.size}, lost ${lost.length} ` +
        `(all acknowledged within the last moments before the kill at #${killedAt})\n`,
    );
    expect(lost.every((s) => Number(s) < Number(produced[afterFailover]))).toBe(true);
    // Lag after the failover: Redis 7.0 replicas do not advance a group's entries-read, so on the
    // promoted master Redis reports as lag every entry read before the kill, for good. The health
    // figures judge by the ids and must reach 0 (readiness with maxLag and drain-and-switch wait for it).
    const promotedKey = partitionStream(stream, 0);
    const rawLag = ((await redis.xinfo('GROUPS', promotedKey)) as unknown[][])[0].at(-1);
    await waitFor(
      async () => {
        const stats = await collectServerStats(server, 100, 5_000);
        return stats.every(({ stats: st }) => !(st instanceof Error) && st.pending === 0 && st.lag === 0);
      },
      'pending 0 and lag 0 on every partition after the failover',
      30_000,
    );
    process.stdout.write(`failover: Redis' own lag of the promoted partition ${String(rawLag)}, reported lag 0\n`);
  }, 120_000);
});
