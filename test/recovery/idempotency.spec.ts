import { Controller, Module } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import {
  IDEMPOTENCY_STORE, Idempotent, JsonCodec, RedisIdempotencyStore, RedisStreamsContext, encodeEnvelope, removeIdleConsumers,
} from 'nest-redis-streams';
import { Logger } from '@nestjs/common';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { pendingCount, redisClient, startMicroservice, unique, waitFor, testContext } from '../support/helpers.js';
import { WorkerProcess } from '../support/worker-process.js';

describe('idempotent handlers and housekeeping', () => {
  const { redis, closers } = testContext();

  it.each([
    { label: 'with the guard, the effect is applied once', idempotent: '1', effects: '1' },
    { label: 'without it, twice (the scenario is real)', idempotent: '0', effects: '2' },
  ])('crash after the effect and before the ack: $label', async ({ idempotent, effects }) => {
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
  }, 30_000);

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
    await redis.xadd(stream, '*', ...encodeEnvelope({ data: { n: 2 }, eventId: 'evt-2' }, codec));
    await waitFor(async () => applied.length === 2 && (await pendingCount(redis, stream, 'nest')) === 0, 'both events and all acks');
    await new Promise((r) => setTimeout(r, 100));
    expect(applied).toHaveLength(2);
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
