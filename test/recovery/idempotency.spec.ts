import { Controller, Module } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import {
  IDEMPOTENCY_STORE,
  Idempotent,
  JsonCodec,
  RedisIdempotencyStore,
  RedisStreamsContext,
  encodeEnvelope,
  idempotencyKey,
  runOnce,
} from 'nest-redis-streams';
import { removeIdleConsumers } from '../../libs/nest-redis-streams/src/recovery/idle-consumers.js';
import { Logger } from '@nestjs/common';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import {
  pendingCount,
  redisClient,
  startMicroservice,
  unique,
  waitFor,
  testContext,
  HANDLER_PATHS,
  runHandlersOn,
} from '../support/helpers.js';
import { WorkerProcess } from '../support/worker-process.js';
import { allSettled } from '../support/settled.js';

describe.each(HANDLER_PATHS)('idempotent handlers (%s path)', (path) => {
  runHandlersOn(path);
  const { redis, closers } = testContext();

  it('@Idempotent() skips a re-published event with the same event id', async () => {
    const stream = unique('decorator');
    const applied: string[] = [];
    @Controller()
    class Payments {
      @EventPattern(stream)
      @Idempotent()
      charge(@Ctx() ctx: RedisStreamsContext) {
        applied.push(ctx.getEntryId());
      }
    }
    const store = new RedisIdempotencyStore(redis, `${stream}:idem:`);
    @Module({ controllers: [Payments], providers: [{ provide: IDEMPOTENCY_STORE, useValue: store }] })
    class PaymentsModule {}
    const { app } = await startMicroservice([], {}, [], true, [PaymentsModule]);
    closers.push(() => app.close());
    const codec = new JsonCodec();
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: { n: 1 }, eventId: 'evt-1' }, codec));
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: { n: 1 }, eventId: 'evt-1' }, codec)); // re-published
    const last = (await redis.xadd(stream, '*', ...encodeEnvelope({ data: { n: 2 }, eventId: 'evt-2' }, codec)))!;
    // Every entry read and settled (not a fixed pause): a duplicate that ran would be in `applied`.
    await allSettled(redis, stream, 'nest', last);
    expect(applied).toHaveLength(2);
  });

  const publish = (stream: string, eventId: string, n = 1) =>
    redis.xadd(stream, '*', ...encodeEnvelope({ data: { n }, eventId }, new JsonCodec()));

  it('@Idempotent() releases its claim when the handler fails, so the retry runs it, once', async () => {
    const stream = unique('decorator-retry');
    const deliveries: number[] = [];
    @Controller()
    class Payments {
      @EventPattern(stream)
      @Idempotent()
      async charge(@Ctx() ctx: RedisStreamsContext) {
        deliveries.push(ctx.getDeliveryCount());
        if (ctx.getDeliveryCount() === 1) throw new Error('provider timeout');
      }
    }
    const store = new RedisIdempotencyStore(redis, `${stream}:idem:`);
    @Module({ controllers: [Payments], providers: [{ provide: IDEMPOTENCY_STORE, useValue: store }] })
    class PaymentsModule {}
    const options = { retryBackoffMs: 20, reclaimIntervalMs: 50 };
    const { app, server } = await startMicroservice([], options, [], true, [PaymentsModule]);
    closers.push(() => app.close());
    const failures: unknown[] = [];
    server.events.on('failed', ({ error }) => failures.push(error));
    await publish(stream, 'pay-1');
    await waitFor(async () => deliveries.length === 2 && (await pendingCount(redis, stream, 'nest')) === 0, 'the retry, acked');
    expect(failures).toEqual([expect.objectContaining({ message: 'provider timeout' })]);
    expect(await redis.get(`${stream}:idem:${stream}|nest|Payments.charge|pay-1`)).toBe('done');
    expect(server.getHandlerPaths()[0].path).toBe(path);
  });

  it('runs the same event id once on each stream: the key names the stream', async () => {
    const created = unique('orders.created');
    const shipped = unique('orders.shipped');
    const store = new RedisIdempotencyStore(redis, `${created}:idem:`);
    const applied: string[] = [];
    // Same group (the default) and the same runOnce handler name on both: only the stream differs.
    @Controller()
    class Orders {
      @EventPattern(created)
      onCreated(@Ctx() ctx: RedisStreamsContext) {
        return runOnce(store, ctx, async () => applied.push(ctx.getStream()));
      }
      @EventPattern(shipped)
      onShipped(@Ctx() ctx: RedisStreamsContext) {
        return runOnce(store, ctx, async () => applied.push(ctx.getStream()));
      }
    }
    const { app } = await startMicroservice([Orders], { retryBackoffMs: 20, reclaimIntervalMs: 50 });
    closers.push(() => app.close());
    await publish(created, 'order-42');
    await publish(shipped, 'order-42');
    await waitFor(
      async () =>
        applied.length >= 2 &&
        (await pendingCount(redis, created, 'nest')) + (await pendingCount(redis, shipped, 'nest')) === 0,
      'both entries handled and acked',
    );
    expect(applied.sort()).toEqual([created, shipped].sort());
  });

  it('does not run an effect again when its entry is redelivered after the effect completed', async () => {
    const stream = unique('redelivered');
    const store = new RedisIdempotencyStore(redis, `${stream}:idem:`);
    let effects = 0;
    const deliveries: number[] = [];
    @Controller()
    class Payments {
      @EventPattern(stream)
      async charge(@Ctx() ctx: RedisStreamsContext) {
        deliveries.push(ctx.getDeliveryCount());
        await runOnce(store, ctx, async () => effects++, { handler: 'Payments.charge' });
        // Fails after the effect is done and before the ack, as a crash there would.
        if (ctx.getDeliveryCount() === 1) throw new Error('lost the connection after charging');
      }
    }
    const { app } = await startMicroservice([Payments], { retryBackoffMs: 20, reclaimIntervalMs: 50 });
    closers.push(() => app.close());
    await publish(stream, 'payment-1');
    await waitFor(
      async () => deliveries.length === 2 && (await pendingCount(redis, stream, 'nest')) === 0,
      'the redelivery, acked',
    );
    expect(effects).toBe(1);
  });

  it.each([
    { label: 'honours a done marker of the old key shape (group:event id) by default', legacyKeys: undefined, runs: 0 },
    { label: 'ignores it with legacyKeys: false', legacyKeys: false, runs: 1 },
  ])('migration: $label', async ({ legacyKeys, runs }) => {
    const stream = unique('legacy');
    const prefix = `${stream}:idem:`;
    const store = new RedisIdempotencyStore(redis, prefix);
    await redis.set(`${prefix}nest:evt-old`, 'done', 'PX', 60_000); // written by the previous version
    let effects = 0;
    @Controller()
    class Payments {
      @EventPattern(stream)
      charge(@Ctx() ctx: RedisStreamsContext) {
        return runOnce(store, ctx, async () => effects++, { legacyKeys });
      }
    }
    const { app } = await startMicroservice([Payments], {});
    closers.push(() => app.close());
    await publish(stream, 'evt-old');
    await waitFor(
      // The marker first: before the read the PEL is empty too, so an empty PEL only means
      // "acked" once the marker (written before the ack) says done.
      async () =>
        (await redis.get(`${prefix}${stream}|nest|run-once|evt-old`)) === 'done' &&
        (await pendingCount(redis, stream, 'nest')) === 0,
      'the entry acked',
    );
    expect(effects).toBe(runs);
    // Either way the new key now says done: the next delivery does not look at the old one again.
    expect(await redis.get(`${prefix}${stream}|nest|run-once|evt-old`)).toBe('done');
  });
});

describe('idempotent handlers: worker processes, handlers sharing a stream, keys and housekeeping', () => {
  const { redis, closers } = testContext();
  const publish = (stream: string, eventId: string, n = 1) =>
    redis.xadd(stream, '*', ...encodeEnvelope({ data: { n }, eventId }, new JsonCodec()));

  it.each([
    { label: 'with the guard, the effect is applied once', idempotent: '1', effects: '1' },
    { label: 'without it, twice (the scenario is real)', idempotent: '0', effects: '2' },
  ])(
    'crash after the effect and before the ack: $label',
    async ({ idempotent, effects }) => {
      const stream = unique('crash-after-effect');
      const env = { REDIS_URL: process.env.REDIS_URL!, STREAM: stream, CONSUMER: 'pay-1', IDEMPOTENT: idempotent };
      await redis.xadd(stream, '*', ...encodeEnvelope({ data: { amount: 100 }, eventId: 'payment-77' }, new JsonCodec()));
      const crashing = await WorkerProcess.start({ ...env, BEHAVIOUR: 'exit-after-effect' }, false);
      closers.push(() => crashing.kill());
      expect(await crashing.exited).toBe(4);
      expect(await pendingCount(redis, stream, 'nest')).toBe(1);
      const healthy = await WorkerProcess.start({ ...env, BEHAVIOUR: 'ok' });
      closers.push(() => healthy.kill());
      await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the redelivery to be acked');
      expect(await redis.hget(`${stream}:effects`, 'payment-77')).toBe(effects);
    },
    30_000,
  );

  it('runs two @Idempotent() handlers of one stream and group once each per event', async () => {
    const stream = unique('two-handlers');
    const applied: string[] = [];
    @Controller()
    class Orders {
      @EventPattern(stream)
      @Idempotent()
      reserveStock(@Ctx() ctx: RedisStreamsContext) {
        applied.push(`stock:${ctx.getEventId()}`);
      }
      @EventPattern(stream)
      @Idempotent()
      sendMail(@Ctx() ctx: RedisStreamsContext) {
        applied.push(`mail:${ctx.getEventId()}`);
      }
    }
    const store = new RedisIdempotencyStore(redis, `${stream}:idem:`);
    @Module({ controllers: [Orders], providers: [{ provide: IDEMPOTENCY_STORE, useValue: store }] })
    class OrdersModule {}
    const { app } = await startMicroservice([], { retryBackoffMs: 20, reclaimIntervalMs: 50 }, [], true, [OrdersModule]);
    closers.push(() => app.close());
    await publish(stream, 'evt-1');
    await publish(stream, 'evt-1'); // re-published: both handlers skip it
    await waitFor(
      async () => applied.length >= 2 && (await redis.xlen(stream)) === 2 && (await pendingCount(redis, stream, 'nest')) === 0,
      'both entries acked',
    );
    expect(applied.sort()).toEqual(['mail:evt-1', 'stock:evt-1']);
    expect(await redis.get(`${stream}:idem:${stream}|nest|Orders.sendMail|evt-1`)).toBe('done');
  });

  it('escapes the separator so that no two (stream, group, handler, event) share a key', () => {
    const ctx = (stream: string, group: string, eventId?: string) =>
      new RedisStreamsContext([
        stream,
        '5-0',
        group,
        'c',
        1,
        {},
        eventId,
        { signal: new AbortController().signal, ack: async () => true },
      ]);
    expect(idempotencyKey(ctx('a|b', 'g', 'e'), 'h')).not.toBe(idempotencyKey(ctx('a', 'b|g', 'e'), 'h'));
    expect(idempotencyKey(ctx('orders', 'nest', 'evt|1'), 'Payments.charge')).toBe('orders|nest|Payments.charge|evt%7C1');
    expect(idempotencyKey(ctx('orders', 'nest'))).toBe('orders|nest|run-once|entry:5-0');
  });

  it('removes idle consumers without pending entries, never one that has them', async () => {
    const stream = unique('housekeeping');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    await redis.xadd(stream, '*', 'a', '1');
    await redis.xreadgroup('GROUP', 'g', 'holds-one', 'COUNT', 1, 'STREAMS', stream, '>');
    await redis.xgroup('CREATECONSUMER', stream, 'g', 'empty-old');
    await new Promise((r) => setTimeout(r, 60));
    const scripted = withStreamScripts(redisClient());
    closers.push(() => scripted.quit());
    const removed = await removeIdleConsumers(scripted, stream, 'g', 50, new Logger('test'), 'me');
    expect(removed).toEqual(['empty-old']);
    const names = ((await redis.xinfo('CONSUMERS', stream, 'g')) as string[][]).map((c) => c[1]);
    expect(names).toEqual(['holds-one']);
  });
});
