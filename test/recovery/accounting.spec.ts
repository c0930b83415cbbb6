import { Controller, Module } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import {
  DeadLetterService,
  IDEMPOTENCY_STORE,
  Idempotent,
  JsonCodec,
  RedisIdempotencyStore,
  RedisStreamsContext,
  type RedisStreamsServer,
  encodeEnvelope,
} from 'nest-redis-streams';
import { pendingCount, readAll, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

/** Delivery counts and loss records stay exact under the awkward cases the chaos suite found. */
describe('delivery accounting', () => {
  const { redis, closers } = testContext();

  it('records entries trimmed before the group read them, once, with their number', async () => {
    const stream = unique('trim-audit');
    const handled: string[] = [];
    const make = () => {
      @Controller()
      class Handlers {
        @EventPattern(stream)
        handle(@Ctx() ctx: RedisStreamsContext) {
          handled.push(ctx.getEntryId());
        }
      }
      return Handlers;
    };
    // The transport creates the group, then all consumers are down while a plain MAXLEN trims.
    const first = await startMicroservice([make()], { consumer: 'a', reclaimIntervalMs: 0 });
    await first.app.close();
    for (let i = 0; i < 10; i++) await redis.xadd(stream, '*', 'i', String(i));
    await redis.xtrim(stream, 'MAXLEN', 4); // 6 entries gone unread
    // Listening before listen(): where the server forgets a trimmed gap once read past, the
    // loss is counted before the first read, during start-up.
    const events: number[] = [];
    const listen = (s: RedisStreamsServer) => s.events.on('dead-lettered', (e) => events.push(e.count));
    const a = await startMicroservice([make()], { consumer: 'a', reclaimIntervalMs: 0 }, [], true, [], listen);
    closers.push(() => a.app.close());
    const b = await startMicroservice([make()], { consumer: 'b', reclaimIntervalMs: 0 }, [], true, [], listen);
    closers.push(() => b.app.close());
    await waitFor(() => handled.length === 4, 'the 4 entries left');
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'acks');
    await Promise.all([a.server.reclaimNow(), b.server.reclaimNow()]);
    await a.server.reclaimNow();
    const letters = await readAll(redis, DeadLetterService.streamFor(stream));
    expect(letters.map(([, f]) => [f['dlq:reason'], f['dlq:lost_count'], f['dlq:group']])).toEqual([
      ['trimmed-undelivered', '6', 'nest'],
    ]);
    expect(events).toEqual([6]);
  });

  it('hands a reclaimed entry to the handler with its real delivery count, whatever else this consumer holds', async () => {
    const stream = unique('counts');
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    for (let i = 0; i < 10; i++) await redis.xadd(stream, '*', 'i', String(i));
    const [[, entries]] = (await redis.xreadgroup('GROUP', 'nest', 'dead', 'COUNT', 10, 'STREAMS', stream, '>')) as [
      string,
      [string, string[]][],
    ][];
    const ids = entries.map(([id]) => id);
    // The middle eight belong to "me" already; the first and last are stale under the dead consumer.
    await redis.call('XCLAIM', stream, 'nest', 'me', 0, ...ids.slice(1, 9), 'JUSTID');
    await redis.call('XCLAIM', stream, 'nest', 'dead', 0, ids[0], ids[9], 'IDLE', 60_000, 'JUSTID');
    const seen = new Map<string, number>();
    @Controller()
    class Handlers {
      @EventPattern(stream, { concurrency: 10 })
      handle(@Ctx() ctx: RedisStreamsContext) {
        seen.set(ctx.getEntryId(), ctx.getDeliveryCount());
      }
    }
    const { app, server } = await startMicroservice([Handlers], { consumer: 'me', reclaimIntervalMs: 0, minIdleTimeMs: 30_000 });
    closers.push(() => app.close());
    await waitFor(() => seen.size === 8, 'the replay of the eight');
    await server.reclaimNow();
    await waitFor(() => seen.size === 10, 'the two reclaimed entries');
    expect([seen.get(ids[0]), seen.get(ids[9])]).toEqual([2, 2]);
  });

  it("does not spend the retry budget while another delivery holds the event's idempotency claim", async () => {
    const stream = unique('deferred');
    const store = new RedisIdempotencyStore(redis, `${stream}:idem:`);
    let runs = 0;
    @Controller()
    class Payments {
      @EventPattern(stream, { maxDeliveries: 2 })
      @Idempotent({ processingTtlMs: 1_000 })
      charge() {
        runs++;
      }
    }
    @Module({ controllers: [Payments], providers: [{ provide: IDEMPOTENCY_STORE, useValue: store }] })
    class PaymentsModule {}
    // A consumer died inside the effect: its "processing" claim lives on for 1 s.
    await store.begin('nest:evt-9', 1_000);
    const { app } = await startMicroservice([], { minIdleTimeMs: 200, reclaimIntervalMs: 30, retryBackoffMs: 20 }, [], true, [
      PaymentsModule,
    ]);
    closers.push(() => app.close());
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: {}, eventId: 'evt-9' }, new JsonCodec()));
    await waitFor(
      async () => runs === 1 && (await pendingCount(redis, stream, 'nest')) === 0,
      'the charge after the claim expired',
      10_000,
    );
    expect(await redis.xlen(DeadLetterService.streamFor(stream))).toBe(0);
  });
});
