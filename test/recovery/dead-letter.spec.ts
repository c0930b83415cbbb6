import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { DeadLetterService, NonRetryableError, RedisStreamsContext } from 'nest-redis-streams';
import { pendingCount, readAll, startMicroservice, unique, waitFor, testContext } from '../support/helpers.js';
import { WorkerProcess } from '../support/worker-process.js';

const fastRetry = { minIdleTimeMs: 200, reclaimIntervalMs: 50, retryBackoffMs: 10 };

describe('dead-letter stream', () => {
  const { redis, closers } = testContext();
  const deadLetters = new DeadLetterService(redis);

  it('parks a poison entry after exactly maxDeliveries, with full metadata, and nothing stays pending', async () => {
    const stream = unique('poison');
    const attempts: number[] = [];
    let healthy = false;
    const redelivered: Array<[unknown, number]> = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { maxDeliveries: 3 })
      handle(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
        if (!healthy) {
          attempts.push(ctx.getDeliveryCount());
          throw new TypeError('amount must be positive');
        }
        redelivered.push([data, ctx.getDeliveryCount()]);
      }
    }
    const { app } = await startMicroservice([Handlers], { ...fastRetry, consumer: 'billing-1' });
    closers.push(() => app.close());
    const id = await redis.xadd(stream, '*', 'amount', '-5');
    const dlq = DeadLetterService.streamFor(stream);
    await waitFor(async () => (await redis.xlen(dlq)) === 1, 'the dead letter', 10_000);
    expect(attempts).toEqual([1, 2, 3]);
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
    const { items } = await deadLetters.list(dlq);
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({
      reason: 'max-deliveries', stream, originalId: id, group: 'nest', consumer: 'billing-1',
      error: 'amount must be positive', errorClass: 'TypeError', deliveries: 3, fields: { amount: '-5' },
    });
    expect(Math.abs(items[0].parkedAt - Date.now())).toBeLessThan(10_000);

    // Re-drive once the bug is fixed: a new entry with a fresh delivery budget.
    healthy = true;
    const newId = await deadLetters.redrive(dlq, items[0].id);
    expect(newId).toEqual(expect.any(String));
    expect(await deadLetters.redrive(dlq, items[0].id)).toBeNull(); // safe to retry
    await waitFor(() => redelivered.length === 1, 'the re-driven entry');
    expect(redelivered).toEqual([[{ amount: '-5' }, 1]]);
    expect(await redis.xlen(dlq)).toBe(0);
  }, 20_000);

  it('parks at once when the handler throws NonRetryableError; discard removes it', async () => {
    const stream = unique('non-retryable');
    let calls = 0;
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle() {
        calls++;
        throw new NonRetryableError('unknown product SKU-9');
      }
    }
    const { app } = await startMicroservice([Handlers], fastRetry);
    closers.push(() => app.close());
    await redis.xadd(stream, '*', 'sku', 'SKU-9');
    const dlq = DeadLetterService.streamFor(stream);
    await waitFor(async () => (await redis.xlen(dlq)) === 1, 'the dead letter');
    const [letter] = (await deadLetters.list(dlq)).items;
    expect(letter).toMatchObject({ reason: 'non-retryable', deliveries: 1, errorClass: 'NonRetryableError' });
    expect(calls).toBe(1);
    expect(await deadLetters.discard(dlq, letter.id)).toBe(true);
    expect(await deadLetters.discard(dlq, letter.id)).toBe(false);
  });

  it('pages through dead letters', async () => {
    const dlq = unique('paging');
    for (let i = 0; i < 5; i++) await redis.xadd(dlq, '*', 'dlq:reason', 'non-retryable', 'dlq:stream', 's', 'n', String(i));
    const first = await deadLetters.list(dlq, { count: 2 });
    const second = await deadLetters.list(dlq, { count: 2, after: first.next! });
    const third = await deadLetters.list(dlq, { count: 2, after: second.next! });
    expect([...first.items, ...second.items, ...third.items].map((l) => l.fields.n)).toEqual(['0', '1', '2', '3', '4']);
    expect(third.next).toBeNull();
  });

  it('parks the entry of a handler that kills its process on every delivery', async () => {
    const stream = unique('exit');
    const env = { REDIS_URL: process.env.REDIS_URL!, STREAM: stream, CONSUMER: 'crashy', BEHAVIOUR: 'exit', MAX_DELIVERIES: '3' };
    const id = await redis.xadd(stream, '*', 'order', 'kills-the-process');
    const dlq = DeadLetterService.streamFor(stream);
    const deliveries: number[] = [];
    for (let run = 0; run < 6 && (await redis.xlen(dlq)) === 0; run++) {
      const worker = await WorkerProcess.start(env, false);
      closers.push(() => worker.kill());
      await Promise.race([worker.exited, waitFor(async () => (await redis.xlen(dlq)) === 1, 'the dead letter', 15_000)]);
      deliveries.push(...worker.messages.filter((m) => m.type === 'start').map((m) => m.deliveries!));
      await worker.kill();
    }
    expect(deliveries).toEqual([1, 2, 3]);
    const [letter] = (await deadLetters.list(dlq)).items;
    expect(letter).toMatchObject({ reason: 'max-deliveries', originalId: id, deliveries: 4 });
    expect(letter.error).toMatch(/may have crashed/);
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
  }, 60_000);

  it('writes tombstones for pending entries whose payload was trimmed away', async () => {
    const stream = unique('trimmed');
    const tombstones: string[] = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { maxDeliveries: 100 })
      handle() {
        throw new Error('downstream unavailable');
      }
    }
    const { app, server } = await startMicroservice([Handlers], { ...fastRetry, reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    server.events.on('dead-lettered', (e) => {
      if (e.reason === 'payload-trimmed') tombstones.push(e.id);
    });
    const ids = [await redis.xadd(stream, '*', 'n', '1'), await redis.xadd(stream, '*', 'n', '2')];
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 2, 'two failed entries pending');
    await redis.xtrim(stream, 'MAXLEN', 0); // retention without safe trimming: the seeds' incident
    await waitFor(async () => (await server.reclaimNow(), tombstones.length === 2), 'the tombstones', 10_000);
    expect([...tombstones].sort()).toEqual([...ids].sort());
    const letters = await readAll(redis, DeadLetterService.streamFor(stream));
    // Retries and the reclaimer can find them in either order.
    expect(letters.map(([, f]) => [f['dlq:reason'], f['dlq:id']]).sort()).toEqual(ids.map((id) => ['payload-trimmed', id]).sort());
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
  }, 20_000);
});
