import { Controller } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import { Ctx, EventPattern, type MessageHandler, Payload } from '@nestjs/microservices';
import { JsonCodec, RedisStreamsContext, RedisStreamsServer, encodeEnvelope, streamPattern } from 'nest-redis-streams';
import {
  pendingCount,
  redisUrl,
  startMicroservice,
  unique,
  waitFor,
  testContext,
  startRecorder,
  HANDLER_PATHS,
  runHandlersOn,
} from '../support/helpers.js';

describe.each(HANDLER_PATHS)('consuming a stream in a consumer group (%s path)', (path) => {
  runHandlersOn(path);
  const { redis, closers } = testContext();

  it('decodes the library envelope to data, headers and event id, and acks after the handler', async () => {
    const stream = unique('envelope');
    const seen: Array<{ data: unknown; headers: unknown; eventId?: string; stream: string; group: string }> = [];
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
        seen.push({ data, headers: ctx.getHeaders(), eventId: ctx.getEventId(), stream: ctx.getStream(), group: ctx.getGroup() });
      }
    }
    const { app } = await startMicroservice([Handlers], {});
    closers.push(() => app.close());
    const fields = encodeEnvelope(
      { data: { orderId: 7, items: [1, 2] }, eventId: 'evt-7', headers: { tenant: 'acme' } },
      new JsonCodec(),
    );
    await redis.xadd(stream, '*', ...fields);
    await waitFor(() => seen.length === 1, 'the entry to be handled');
    expect(seen[0]).toEqual({
      data: { orderId: 7, items: [1, 2] },
      headers: { tenant: 'acme' },
      eventId: 'evt-7',
      stream,
      group: 'nest',
    });
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the ack');
  });

  it('hands entries from other producers (redis-cli style) to the handler as an object of their fields', async () => {
    const stream = unique('foreign');
    const { seen } = await startRecorder(closers, stream);
    await redis.xadd(stream, '*', 'userId', '1001', 'amount', '50000');
    await redis.xadd(stream, '*', '__proto__', 'x', 'constructor', 'y');
    await waitFor(() => seen.length === 2, 'two entries');
    expect(seen[0]).toEqual({ userId: '1001', amount: '50000' });
    expect(Object.getOwnPropertyNames(seen[1])).toEqual(['__proto__', 'constructor']);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('leaves a failed entry pending while later entries are processed and acked', async () => {
    const stream = unique('failing');
    const handled: string[] = [];
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle(@Payload() data: { n: string }) {
        if (data.n === '2') throw new Error('payment gateway down');
        handled.push(data.n);
      }
    }
    const { app } = await startMicroservice([Handlers], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    const ids: string[] = [];
    for (const n of ['1', '2', '3', '4']) ids.push((await redis.xadd(stream, '*', 'n', n))!);
    await waitFor(() => handled.length === 3, 'entries 1, 3 and 4');
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 1, 'only the failed entry pending');
    const [[pendingId]] = (await redis.xpending(stream, 'nest', '-', '+', 10)) as [[string]];
    expect(handled).toEqual(['1', '3', '4']);
    expect(pendingId).toBe(ids[1]);
  });

  it('subscribes a streamPattern() handler exactly like a plain stream name, group and context included', async () => {
    const stream = unique('pattern-object');
    const seen: Array<[unknown, string, string]> = [];
    @Controller()
    class Typed {
      @EventPattern(streamPattern(stream), { group: 'billing' })
      handle(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
        seen.push([data, ctx.getStream(), ctx.getGroup()]);
      }
    }
    const { app } = await startMicroservice([Typed], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    await redis.xadd(stream, '*', 'n', '1');
    await waitFor(() => seen.length === 1, 'the entry');
    expect(seen).toEqual([[{ n: '1' }, stream, 'billing']]);
    await waitFor(async () => (await pendingCount(redis, stream, 'billing')) === 0, 'acked');
    expect(() => streamPattern('')).toThrow('streamPattern() needs the stream\'s name as a non-empty string, got "".');
  });

  it('gives every entry to each of two groups on one stream', async () => {
    const stream = unique('two-groups');
    const billing: string[] = [];
    const shipping: string[] = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { group: 'billing' })
      bill(@Payload() data: { n: string }) {
        billing.push(data.n);
      }
      @EventPattern(stream, { group: 'shipping', concurrency: 4 })
      ship(@Payload() data: { n: string }) {
        shipping.push(data.n);
      }
    }
    const { app } = await startMicroservice([Handlers], {});
    closers.push(() => app.close());
    const sent = Array.from({ length: 50 }, (_, i) => String(i));
    for (const n of sent) await redis.xadd(stream, '*', 'n', n);
    await waitFor(() => billing.length === 50 && shipping.length === 50, 'both groups to see 50 entries');
    expect(billing).toEqual(sent);
    expect([...shipping].sort()).toEqual([...sent].sort());
    await waitFor(
      async () => (await pendingCount(redis, stream, 'billing')) + (await pendingCount(redis, stream, 'shipping')) === 0,
      'acks',
    );
  });

  it('never runs more than `concurrency` handlers at once', async () => {
    const stream = unique('concurrency');
    let running = 0;
    let peak = 0;
    let done = 0;
    @Controller()
    class Handlers {
      @EventPattern(stream, { concurrency: 3, prefetchCount: 10 })
      async handle() {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        done++;
      }
    }
    const { app } = await startMicroservice([Handlers], {});
    closers.push(() => app.close());
    const pipeline = redis.pipeline();
    for (let i = 0; i < 60; i++) pipeline.xadd(stream, '*', 'i', String(i));
    await pipeline.exec();
    await waitFor(() => done === 60, '60 handled entries');
    expect(peak).toBe(3);
  });

  it('starts a group at "$" when asked, skipping what the stream already holds', async () => {
    const stream = unique('start-id');
    await redis.xadd(stream, '*', 'n', 'old');
    const { seen } = await startRecorder<{ n: string }>(closers, stream, {}, { startId: '$' });
    await redis.xadd(stream, '*', 'n', 'new');
    await waitFor(() => seen.length === 1, 'the new entry');
    expect(seen).toEqual([{ n: 'new' }]);
  });

  it('acks an observable handler only after it completes', async () => {
    const stream = unique('observable');
    const { Observable } = await import('rxjs');
    let complete!: () => void;
    let started = false;
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle() {
        return new Observable<void>((sub) => {
          started = true;
          complete = () => sub.complete();
        });
      }
    }
    const { app } = await startMicroservice([Handlers], {});
    closers.push(() => app.close());
    await redis.xadd(stream, '*', 'a', '1');
    await waitFor(() => started, 'the handler to start');
    expect(await pendingCount(redis, stream, 'nest')).toBe(1);
    complete();
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the ack after completion');
  });

  it('lets a handler ack through the context in manual mode', async () => {
    const stream = unique('manual');
    const results: boolean[] = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { ackMode: 'manual' })
      async handle(@Payload() data: { ack: string }, @Ctx() ctx: RedisStreamsContext) {
        if (data.ack === 'yes') results.push(await ctx.ack());
        else results.push(false);
      }
    }
    const { app } = await startMicroservice([Handlers], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    await redis.xadd(stream, '*', 'ack', 'yes');
    const skipped = await redis.xadd(stream, '*', 'ack', 'no');
    await waitFor(() => results.length === 2, 'both entries');
    expect(results).toEqual([true, false]);
    const pending = (await redis.xpending(stream, 'nest', '-', '+', 10)) as Array<[string]>;
    expect(pending.map(([id]) => id)).toEqual([skipped]);
  });

  it("registers its reclaim interval in the application's SchedulerRegistry (leases stay private) and removes it on close", async () => {
    // Lease renewal is kept out of the registry: ScheduleModule clears registered intervals
    // before Nest closes microservices, and leases must outlive that until handlers finish.
    const stream = unique('scheduled');
    const registry = new SchedulerRegistry();
    const { app } = await startRecorder(closers, stream, { schedulerRegistry: registry, consumer: 'pod-a' });
    const names = registry.getIntervals().sort();
    expect(names).toEqual([`nrs:reclaim:${stream}:nest:pod-a`]);
    await app.close();
    expect(registry.getIntervals()).toEqual([]);
  });
});

describe('consuming a stream: handlers registered by hand, without Nest', () => {
  const { redis, closers } = testContext();

  it('settles synchronous handlers without recursion, however long the waiting queue', async () => {
    // A handler registered by hand (not through Nest) may return a plain value; the consumer
    // then settles the entry at once. Entries waiting behind one slot each start when the one
    // before settles: a recursion per entry would overflow the stack, a loop does not.
    const stream = unique('sync');
    const pipeline = redis.pipeline();
    for (let i = 0; i < 20_000; i++) pipeline.xadd(stream, '*', 'n', String(i));
    await pipeline.exec();
    const seen: number[] = [];
    const server = new RedisStreamsServer({
      connection: redisUrl(),
      concurrency: 1,
      prefetchCount: 20_000,
      reclaimIntervalMs: 0,
    });
    // The first entry takes a while, so the other 19,999 queue up behind the single slot.
    server.addHandler(
      stream,
      ((data: { n: string }) => {
        seen.push(Number(data.n));
        return data.n === '0' ? new Promise((resolve) => setTimeout(resolve, 100)) : undefined;
      }) as unknown as MessageHandler,
      true,
      {},
    );
    await new Promise<void>((resolve, reject) => void server.listen((err) => (err ? reject(err) : resolve())));
    closers.push(() => server.close());
    await waitFor(() => seen.length === 20_000, 'all 20,000 entries', 45_000);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'every entry acked');
    expect(seen).toEqual(Array.from({ length: 20_000 }, (_, i) => i));
  }, 60_000); // 20,000 entries: more than 5 s on a busy machine

  it('acks an entry whose hand-registered handler returns a foreign thenable only after it resolves', async () => {
    const stream = unique('thenable');
    let release: (() => void) | null = null;
    const server = new RedisStreamsServer({ connection: redisUrl(), reclaimIntervalMs: 0 });
    // Not a native Promise: a library's own promise type, adopted like `await` would.
    server.addHandler(
      stream,
      (() => ({ then: (resolve: () => void) => (release = resolve) })) as unknown as MessageHandler,
      true,
      {},
    );
    await new Promise<void>((resolve, reject) => void server.listen((err) => (err ? reject(err) : resolve())));
    closers.push(() => server.close());
    await redis.xadd(stream, '*', 'n', '1');
    await waitFor(() => release, 'the handler to run');
    // Asserting an absence: a wrong ack goes out on the next event-loop turn, and 100 ms is many
    // round trips to a local Redis.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await pendingCount(redis, stream, 'nest')).toBe(1);
    release!();
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the ack after the thenable resolved');
  });
});
