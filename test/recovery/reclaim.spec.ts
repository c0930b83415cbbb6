import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { RedisStreamsContext } from 'nest-redis-streams';
import { pendingCount, startMicroservice, unique, waitFor, testContext } from '../support/helpers.js';
import { WorkerProcess } from '../support/worker-process.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('reclaiming entries of dead and slow consumers', () => {
  const { redis, closers } = testContext();

  it('takes over the entry of a consumer process killed mid-handler; delivery count 2', async () => {
    const stream = unique('sigkill');
    const worker = await WorkerProcess.start({
      REDIS_URL: process.env.REDIS_URL!,
      STREAM: stream,
      CONSUMER: 'doomed',
      BEHAVIOUR: 'slow:60000',
      MIN_IDLE: '500',
    });
    closers.push(() => worker.kill());
    const id = await redis.xadd(stream, '*', 'order', '42');
    await worker.waitFor((m) => m.type === 'start' && m.id === id, 'the worker to start the entry');
    await worker.kill('SIGKILL');

    const handled: Array<[string, number, string]> = [];
    @Controller()
    class Survivor {
      @EventPattern(stream)
      handle(@Ctx() ctx: RedisStreamsContext) {
        handled.push([ctx.getEntryId(), ctx.getDeliveryCount(), ctx.getConsumer()]);
      }
    }
    const { app } = await startMicroservice([Survivor], { consumer: 'survivor', minIdleTimeMs: 500, reclaimIntervalMs: 100 });
    closers.push(() => app.close());
    await waitFor(() => handled.length === 1, 'the reclaimed entry to be handled');
    expect(handled).toEqual([[id, 2, 'survivor']]);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the ack');
  }, 30_000);

  it.each([
    { label: 'on', leaseRenewal: true, times: 'once', expected: ['a'] },
    // Without leases the test must fail the guarantee: this shows it can.
    { label: 'off', leaseRenewal: false, times: 'twice', expected: ['a', 'b'] },
  ])(
    'with lease renewal $label, a handler slower than 3x min-idle runs $times across two instances',
    async ({ leaseRenewal, expected }) => {
      const stream = unique('lease');
      const runs: string[] = [];
      const make = () => {
        @Controller()
        class Slow {
          @EventPattern(stream)
          async handle(@Ctx() ctx: RedisStreamsContext) {
            runs.push(ctx.getConsumer());
            // With leases the entry is held 900 ms (3x min-idle). Without, it is held until the
            // other instance took it over (bounded): a fixed 900 ms let a busy machine ack it first.
            if (leaseRenewal) await sleep(900);
            else await waitFor(() => runs.length >= 2, 'the other instance to take the entry over', 8_000).catch(() => undefined);
          }
        }
        return Slow;
      };
      const options = { minIdleTimeMs: 300, reclaimIntervalMs: 50, leaseRenewal };
      // Instance a gets the entry: it runs alone until its handler started. Its own reclaim rounds
      // are off: each would claim the entry back to a, which resets its idle time like a renewal,
      // and with both instances on a 50 ms beat a could win every round and hide what is shown here.
      const a = await startMicroservice([make()], { ...options, reclaimIntervalMs: 0, consumer: 'a' });
      closers.push(() => a.app.close());
      await redis.xadd(stream, '*', 'payment', 'p-1');
      await waitFor(() => runs.length === 1, 'instance a to start the handler');
      const b = await startMicroservice([make()], { ...options, consumer: 'b' });
      closers.push(() => b.app.close());
      await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the entry to be acked', 10_000);
      // Settled: with nothing pending no round can claim it again, and a run that began before the
      // ack shows in b's in-flight count.
      await waitFor(() => b.server.getConsumers().every((c) => c.heldCount === 0), 'instance b to settle what it claimed');
      expect(runs).toEqual(expected);
    },
    20_000,
  );

  it('never acks an entry that another consumer took over, and tells the handler through its signal', async () => {
    const stream = unique('ownership');
    let aborted = false;
    let finished = false;
    const lost: string[] = [];
    @Controller()
    class Holder {
      @EventPattern(stream)
      async handle(@Ctx() ctx: RedisStreamsContext) {
        await waitFor(() => ctx.getSignal().aborted, 'the lease to be lost', 10_000).catch(() => undefined);
        aborted = ctx.getSignal().aborted;
        finished = true;
      }
    }
    const { app, server } = await startMicroservice([Holder], { consumer: 'holder', minIdleTimeMs: 300, reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    server.events.on('lease-lost', (e) => lost.push(e.id));
    const id = (await redis.xadd(stream, '*', 'k', 'v'))!;
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 1, 'the entry in flight');
    // Another instance takes it over (as after a long GC pause).
    await redis.xclaim(stream, 'nest', 'thief', 0, id, 'JUSTID');
    await waitFor(() => finished, 'the handler to finish');
    expect(aborted).toBe(true);
    expect(lost).toContain(id);
    await sleep(100);
    const [[pendingId, owner]] = (await redis.xpending(stream, 'nest', '-', '+', 10)) as Array<[string, string]>;
    expect([pendingId, owner]).toEqual([id, 'thief']);
  }, 20_000);

  it('gives each stale entry to exactly one of several concurrent reclaimers', async () => {
    const stream = unique('reclaimers');
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    for (let i = 0; i < 60; i++) await redis.xadd(stream, '*', 'i', String(i));
    await redis.xreadgroup('GROUP', 'nest', 'dead-pod', 'COUNT', 100, 'STREAMS', stream, '>');
    const handled: string[] = [];
    const make = () => {
      @Controller()
      class Worker {
        @EventPattern(stream, { concurrency: 4 })
        handle(@Ctx() ctx: RedisStreamsContext) {
          handled.push(ctx.getEntryId());
        }
      }
      return Worker;
    };
    for (const name of ['r1', 'r2', 'r3']) {
      const { app } = await startMicroservice([make()], {
        consumer: name,
        minIdleTimeMs: 100,
        reclaimIntervalMs: 20,
        reclaimCount: 7,
      });
      closers.push(() => app.close());
    }
    await waitFor(
      async () => handled.length >= 60 && (await pendingCount(redis, stream, 'nest')) === 0,
      'every stale entry handled',
    );
    expect(handled.length).toBe(60);
    expect(new Set(handled).size).toBe(60);
  }, 20_000);
  it('counts a reclaimed entry when its handler starts: one waiting in the reserve spends no delivery', async () => {
    const stream = unique('reserve');
    const started: Array<[string, number]> = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    @Controller()
    class Gated {
      // No read-ahead: the reclaim reserve is twice prefetchCount, two entries.
      @EventPattern(stream, { minIdleTimeMs: 100, prefetchCount: 1 })
      async handle(@Ctx() ctx: RedisStreamsContext) {
        started.push([ctx.getEntryId(), ctx.getDeliveryCount()]);
        await gate;
      }
    }
    // Three entries read (delivery 1) by a consumer that died before the server started.
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await redis.xadd(stream, '*', 'n', String(i)))!);
    await redis.xreadgroup('GROUP', 'nest', 'ghost', 'COUNT', 3, 'STREAMS', stream, '>');
    const { app, server } = await startMicroservice([Gated], { consumer: 'pod-r', reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    await waitFor(async () => {
      const rows = (await redis.xpending(stream, 'nest', 'IDLE', 150, '-', '+', 10)) as unknown[];
      return rows.length === 3;
    }, 'the entries to be idle past min-idle');

    expect(await server.reclaimNow()).toBe(2);
    await waitFor(() => started.length === 1, 'the first reclaimed entry to start');
    const deliveries = async () =>
      ((await redis.xpending(stream, 'nest', '-', '+', 10)) as Array<[string, string, number, number]>).map(
        ([id, owner, , count]) => [id, owner, count],
      );
    // Running: counted (2). Claimed but waiting for the slot: still 1. Not claimed: 1.
    expect(await deliveries()).toEqual([
      [ids[0], 'pod-r', 2],
      [ids[1], 'pod-r', 1],
      [ids[2], 'ghost', 1],
    ]);
    release();
    await waitFor(() => started.length === 2, 'the waiting entry to start');
    expect(started).toEqual([
      [ids[0], 2],
      [ids[1], 2],
    ]);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 1, 'both reclaimed entries acked');
  });
});
