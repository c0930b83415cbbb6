import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsBatchContext, streamPattern } from 'nest-redis-streams';
import { pendingCount, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

type Values = Array<{ v: string }>;

/** A controller whose batch handler records each call's values and delivery counts. */
function recorder(stream: string, extras: Record<string, unknown>, run: (values: Values) => Promise<void> | void = () => {}) {
  const calls: Array<{ values: string[]; deliveries: number[] }> = [];
  @Controller()
  class Ledger {
    @EventPattern(streamPattern(stream), extras)
    async record(@Payload() values: Values, @Ctx() batch: RedisStreamsBatchContext) {
      calls.push({ values: values.map(({ v }) => v), deliveries: batch.getEntries().map((ctx) => ctx.getDeliveryCount()) });
      await run(values);
    }
  }
  return { Ledger, calls };
}

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

const addAll = async (redis: ReturnType<typeof testContext>['redis'], stream: string, values: string[]) => {
  const pipeline = redis.pipeline();
  for (const v of values) pipeline.xadd(stream, '*', 'v', v);
  await pipeline.exec();
};

describe('batch handlers: maxWaitMs, replay, reclaim, leases, shutdown', () => {
  const { redis, closers } = testContext();

  it('starts a partial batch once maxWaitMs has passed, with every entry that arrived meanwhile', async () => {
    const stream = unique('batch-partial');
    const { Ledger, calls } = recorder(stream, { batch: { maxSize: 100, maxWaitMs: 300 } });
    const { app } = await startMicroservice([Ledger], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    await redis.xadd(stream, '*', 'v', 'a');
    await addAll(redis, stream, ['b', 'c']);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0 && calls.length > 0, 'the partial batch');
    expect(calls).toEqual([{ values: ['a', 'b', 'c'], deliveries: [1, 1, 1] }]);
  });

  it('starts a full batch at once: a maxWaitMs of a minute does not delay it', async () => {
    const stream = unique('batch-full');
    const { Ledger, calls } = recorder(stream, { batch: { maxSize: 5, maxWaitMs: 60_000 } });
    const { app } = await startMicroservice([Ledger], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    await addAll(redis, stream, ['a', 'b', 'c', 'd', 'e', 'f']);
    // Bounded far below the minute: only an undelayed full batch gets here in time.
    await waitFor(() => calls.length === 1, 'the full batch', 10_000);
    expect(calls[0].values).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it("takes a dead consumer's entries over into the same batch as new ones, counting their delivery", async () => {
    const stream = unique('batch-reclaim');
    await addAll(redis, stream, ['old-1', 'old-2']);
    await redis.xgroup('CREATE', stream, 'nest', '0');
    await redis.xreadgroup('GROUP', 'nest', 'dead', 'COUNT', 2, 'STREAMS', stream, '>');
    // A full batch needs the two reclaimed entries: maxWaitMs alone would take 30 s.
    const { Ledger, calls } = recorder(stream, { batch: { maxSize: 4, maxWaitMs: 30_000 } });
    const { app } = await startMicroservice([Ledger], { consumer: 'me', minIdleTimeMs: 300, reclaimIntervalMs: 50 });
    closers.push(() => app.close());
    await addAll(redis, stream, ['new-1', 'new-2']);
    await waitFor(
      async () => calls.length === 1 && (await pendingCount(redis, stream, 'nest')) === 0,
      'the joined batch',
      10_000,
    );
    const deliveries = Object.fromEntries(calls[0].values.map((v, i) => [v, calls[0].deliveries[i]]));
    expect(deliveries).toEqual({ 'new-1': 1, 'new-2': 1, 'old-1': 2, 'old-2': 2 });
  });

  it("renews every entry of a running batch: another consumer's reclaimer takes none of them", async () => {
    const stream = unique('batch-lease');
    const release = gate();
    const started = gate();
    const a = recorder(stream, { batch: { maxSize: 3, maxWaitMs: 5_000 } }, async () => {
      started.open();
      await release.opened;
    });
    const fast = { minIdleTimeMs: 300, reclaimIntervalMs: 0 };
    const first = await startMicroservice([a.Ledger], { ...fast, consumer: 'a' });
    closers.push(() => first.app.close());
    await addAll(redis, stream, ['x', 'y', 'z']);
    await started.opened;
    const b = recorder(stream, { batch: { maxSize: 3 } });
    const second = await startMicroservice([b.Ledger], { ...fast, consumer: 'b' });
    closers.push(() => second.app.close());
    // Reclaim rounds for five times min-idle: without renewal the entries would idle past it.
    const until = Date.now() + 1_500;
    let claimed = 0;
    await waitFor(async () => ((claimed += await second.server.reclaimNow()), Date.now() > until), 'the reclaim rounds');
    expect(claimed).toBe(0);
    const owners = (await redis.xpending(stream, 'nest', '-', '+', 10)) as Array<[string, string, number, number]>;
    expect(owners.map(([, consumer, , deliveries]) => [consumer, deliveries])).toEqual([
      ['a', 1],
      ['a', 1],
      ['a', 1],
    ]);
    release.open();
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the acks of the batch');
    expect(b.calls).toEqual([]);
  });

  it('shutdown lets a running batch finish and acks it', async () => {
    const stream = unique('batch-close');
    const started = gate();
    const finished: string[] = [];
    const { Ledger } = recorder(stream, { batch: { maxSize: 3, maxWaitMs: 5_000 } }, async (values) => {
      started.open();
      await new Promise((resolve) => setTimeout(resolve, 300));
      finished.push(...values.map(({ v }) => v));
    });
    const { app } = await startMicroservice([Ledger], { reclaimIntervalMs: 0 });
    await addAll(redis, stream, ['a', 'b', 'c']);
    await started.opened;
    await app.close();
    expect(finished).toEqual(['a', 'b', 'c']);
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
  });

  it('shutdown past shutdownTimeoutMs hands an unfinished batch back, and another instance runs it', async () => {
    const stream = unique('batch-handback');
    const started = gate();
    const stuck = gate();
    const slow = recorder(stream, { batch: { maxSize: 2, maxWaitMs: 5_000 } }, async () => {
      started.open();
      await stuck.opened;
    });
    const minIdleTimeMs = 10_000;
    const first = await startMicroservice([slow.Ledger], {
      consumer: 'slow',
      minIdleTimeMs,
      shutdownTimeoutMs: 200,
      reclaimIntervalMs: 0,
    });
    await addAll(redis, stream, ['a', 'b']);
    await started.opened;
    await first.app.close();
    stuck.open();
    const pending = (await redis.xpending(stream, 'nest', '-', '+', 10)) as Array<[string, string, number, number]>;
    expect(pending.map(([, consumer]) => consumer)).toEqual(['slow', 'slow']);
    // Handed back: idle set to min-idle, so the next reclaim round anywhere takes them at once.
    expect(Math.min(...pending.map(([, , idle]) => idle))).toBeGreaterThanOrEqual(minIdleTimeMs);
    const next = recorder(stream, { batch: { maxSize: 2, maxWaitMs: 5_000 } });
    const second = await startMicroservice([next.Ledger], { consumer: 'next', minIdleTimeMs, reclaimIntervalMs: 50 });
    closers.push(() => second.app.close());
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the batch run by the other instance');
    expect(next.calls).toEqual([{ values: ['a', 'b'], deliveries: [2, 2] }]);
  });
});
