import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { throwError } from 'rxjs';
import { DeadLetterService, ENVELOPE, NonRetryableError, RedisStreamsContext, type TransportEventMap } from 'nest-redis-streams';
import {
  pendingCount,
  readAll,
  startMicroservice,
  unique,
  waitFor,
  testContext,
  HANDLER_PATHS,
  runHandlersOn,
} from '../support/helpers.js';
import { WorkerProcess } from '../support/worker-process.js';

const fastRetry = { minIdleTimeMs: 200, reclaimIntervalMs: 50, retryBackoffMs: 10 };
// Not UTF-8: a lone continuation byte, 0xff, 0xfe and a NUL (a Protobuf or MessagePack producer's bytes).
const BINARY = Buffer.from([0x08, 0x96, 0x01, 0xff, 0xfe, 0x00, 0x41]);
const hex = (buffers: Buffer[]) => buffers.map((b) => b.toString('hex'));

describe.each(HANDLER_PATHS)('dead-letter stream (%s path)', (path) => {
  runHandlersOn(path);
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
      reason: 'max-deliveries',
      stream,
      originalId: id,
      group: 'nest',
      consumer: 'billing-1',
      error: 'amount must be positive',
      errorClass: 'TypeError',
      deliveries: 3,
      fields: { amount: '-5' },
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

  it('without RedisStreamsExceptionFilter too, parks a NonRetryableError at once with its message (sync, async, Observable)', async () => {
    const [sync, async, observable] = [unique('default-sync'), unique('default-async'), unique('default-observable')];
    @Controller()
    class Handlers {
      @EventPattern(sync)
      failNow() {
        throw new NonRetryableError('rejected at once');
      }
      @EventPattern(async)
      async failLater() {
        throw new NonRetryableError('rejected later');
      }
      @EventPattern(observable)
      failInStream() {
        return throwError(() => new NonRetryableError('rejected in a stream'));
      }
    }
    const { app } = await startMicroservice([Handlers], { ...fastRetry, maxDeliveries: 2 }, [], false);
    closers.push(() => app.close());
    const letters: Record<string, unknown> = {};
    for (const stream of [sync, async, observable]) {
      await redis.xadd(stream, '*', 'n', '1');
      const dlq = DeadLetterService.streamFor(stream);
      await waitFor(async () => (await redis.xlen(dlq)) === 1, `the dead letter of ${stream}`);
      const [letter] = (await deadLetters.list(dlq)).items;
      letters[stream] = { reason: letter.reason, error: letter.error, deliveries: letter.deliveries };
    }
    // Nest's default filter applies (no filter is bound): the transport still sees the error itself.
    const parked = (error: string) => ({ reason: 'non-retryable', error, deliveries: 1 });
    expect(letters).toEqual({
      [sync]: parked('rejected at once'),
      [async]: parked('rejected later'),
      [observable]: parked('rejected in a stream'),
    });
  });

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
    expect(letters.map(([, f]) => [f['dlq:reason'], f['dlq:id']]).sort()).toEqual(
      ids.map((id) => ['payload-trimmed', id]).sort(),
    );
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
  }, 20_000);

  it('keeps every byte of a binary field name and value through parking and re-drive', async () => {
    const stream = unique('binary');
    let healthy = false;
    const redelivered: string[] = [];
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle(@Ctx() ctx: RedisStreamsContext) {
        if (!healthy) throw new NonRetryableError('schema registry unavailable');
        redelivered.push(ctx.getEntryId());
      }
    }
    const { app } = await startMicroservice([Handlers], fastRetry);
    closers.push(() => app.close());
    const original = [BINARY, BINARY, Buffer.from('n'), Buffer.from('1')];
    await redis.xadd(stream, '*', ...original);
    const dlq = DeadLetterService.streamFor(stream);
    await waitFor(async () => (await redis.xlen(dlq)) === 1, 'the dead letter');
    const [letter] = (await deadLetters.list(dlq)).items;
    const bytes = await deadLetters.inspectBytes(dlq, letter.id);
    expect(bytes).toMatchObject({ reason: 'non-retryable', stream });
    expect(hex(bytes!.fields.flat())).toEqual(hex(original));

    healthy = true;
    const newId = (await deadLetters.redrive(dlq, letter.id))!;
    await waitFor(() => redelivered.length === 1, 'the re-driven entry');
    const [[, fields]] = await redis.xrangeBuffer(stream, newId, newId);
    const lineage = [ENVELOPE.redrivenFrom, letter.id, ENVELOPE.originalId, letter.originalId].map((f) => Buffer.from(f));
    expect(hex(fields)).toEqual(hex([...original, Buffer.from(ENVELOPE.targetGroup), Buffer.from('nest'), ...lineage]));
  });

  it('re-drives to the group that parked the entry: the other group acks it without running it', async () => {
    const stream = unique('two-groups');
    const runs: Record<'payments' | 'shipping', string[]> = { payments: [], shipping: [] };
    let paymentsHealthy = false;
    @Controller()
    class Payments {
      @EventPattern(stream, { group: 'payments' })
      charge(@Payload() data: { order: string }) {
        runs.payments.push(data.order);
        if (!paymentsHealthy) throw new NonRetryableError('card processor down');
      }
    }
    @Controller()
    class Shipping {
      @EventPattern(stream, { group: 'shipping' })
      ship(@Payload() data: { order: string }) {
        runs.shipping.push(data.order);
      }
    }
    const { app, server } = await startMicroservice([Payments, Shipping], fastRetry);
    closers.push(() => app.close());
    const skipped: Array<TransportEventMap['skipped'][0]> = [];
    server.events.on('skipped', (e) => skipped.push(e));
    await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'order-7', 'data', '{"order":"7"}');
    const dlq = DeadLetterService.streamFor(stream);
    await waitFor(
      async () => (await redis.xlen(dlq)) === 1 && runs.shipping.length === 1,
      'payments to park, shipping to handle',
    );
    const [letter] = (await deadLetters.list(dlq)).items;
    expect(letter.group).toBe('payments');

    paymentsHealthy = true;
    await deadLetters.redrive(dlq, letter.id);
    await waitFor(() => runs.payments.length === 2 && skipped.length === 1, 'payments to run the re-drive, shipping to skip it');
    expect(skipped[0]).toMatchObject({ reason: 'other-group', group: 'shipping', stream });
    expect(runs).toEqual({ payments: ['7', '7'], shipping: ['7'] });
    await waitFor(
      async () => (await pendingCount(redis, stream, 'payments')) + (await pendingCount(redis, stream, 'shipping')) === 0,
      'both groups acked',
    );
    expect(await redis.xlen(dlq)).toBe(0);
  });

  it('leaves an entry alone once its handler acked it, even if the handler throws afterwards', async () => {
    const stream = unique('ack-then-throw');
    let calls = 0;
    let acked: Promise<boolean> | undefined;
    @Controller()
    class Handlers {
      @EventPattern(stream, { ackMode: 'manual', maxDeliveries: 1 })
      handle(@Ctx() ctx: RedisStreamsContext) {
        calls++;
        acked = ctx.ack(); // the work is committed and acknowledged...
        throw new Error('...and a later step (a metrics call) fails');
      }
    }
    const { app, server } = await startMicroservice([Handlers], fastRetry);
    closers.push(() => app.close());
    const events: string[] = [];
    server.events.on('lease-lost', () => events.push('lease-lost'));
    server.events.on('dead-lettered', () => events.push('dead-lettered'));
    await redis.xadd(stream, '*', 'n', '1');
    await waitFor(() => acked, 'the handler to ack');
    expect(await acked).toBe(true);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the entry acked');
    await server.reclaimNow(); // nothing pending is left to reclaim and run again
    expect(await redis.xlen(DeadLetterService.streamFor(stream))).toBe(0);
    expect(events).toEqual([]);
    expect(calls).toBe(1);
  });
});

describe('dead-letter stream: listing, and a worker process that crashes', () => {
  const { redis, closers } = testContext();
  const deadLetters = new DeadLetterService(redis);

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
});
