import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, MessagePattern, Payload } from '@nestjs/microservices';
import {
  DeadLetterService,
  JsonCodec,
  NonRetryableError,
  RedisStreamsBatchContext,
  encodeEnvelope,
  streamPattern,
} from 'nest-redis-streams';
import { pendingCount, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

/** One call of a batch handler as the tests see it. */
interface Call {
  payloads: unknown[];
  ids: string[];
  deliveries: number[];
}

const record = (payloads: unknown[], batch: RedisStreamsBatchContext): Call => ({
  payloads,
  ids: batch.getEntries().map((ctx) => ctx.getEntryId()),
  deliveries: batch.getEntries().map((ctx) => ctx.getDeliveryCount()),
});

const fastRetry = { minIdleTimeMs: 300, reclaimIntervalMs: 50, retryBackoffMs: 50 };

describe('batch handlers: per-entry outcomes', () => {
  const { redis, closers } = testContext();
  const deadLetters = new DeadLetterService(redis);

  it('hands the handler payloads in stream order with a context per entry, and acks all in one ack call when it resolves', async () => {
    const stream = unique('batch-all');
    const calls: Call[] = [];
    const headers: Array<Record<string, string>> = [];
    const eventIds: Array<string | undefined> = [];
    @Controller()
    class Ledger {
      @EventPattern(streamPattern(stream), { group: 'ledger', batch: { maxSize: 5, maxWaitMs: 5_000 } })
      record(@Payload() orders: Array<{ n: number }>, @Ctx() batch: RedisStreamsBatchContext) {
        calls.push(record(orders, batch));
        headers.push(...batch.getEntries().map((ctx) => ctx.getHeaders()));
        eventIds.push(...batch.getEntries().map((ctx) => ctx.getEventId()));
        expect(batch.getSize()).toBe(orders.length);
        expect(batch.getGroup()).toBe('ledger');
      }
    }
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) {
      const fields = encodeEnvelope({ data: { n }, eventId: `evt-${n}`, headers: { tenant: 'acme' } }, new JsonCodec());
      ids.push((await redis.xadd(stream, '*', ...fields))!);
    }
    const { app, server } = await startMicroservice([Ledger], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    const acked: number[] = [];
    server.events.on('acked', ({ count }) => acked.push(count));
    await waitFor(async () => (await pendingCount(redis, stream, 'ledger')) === 0 && acked.length > 0, 'the acks');
    expect(calls).toEqual([{ payloads: [0, 1, 2, 3, 4].map((n) => ({ n })), ids, deliveries: [1, 1, 1, 1, 1] }]);
    expect(headers).toEqual(Array(5).fill({ tenant: 'acme' }));
    expect(eventIds).toEqual(['evt-0', 'evt-1', 'evt-2', 'evt-3', 'evt-4']);
    expect(acked).toEqual([5]);
  });

  it('keeps stream order across batches with concurrency 1 (the default)', async () => {
    const stream = unique('batch-order');
    const seen: number[] = [];
    const sizes: number[] = [];
    @Controller()
    class Ledger {
      @EventPattern(streamPattern(stream), { batch: { maxSize: 7 } })
      async record(@Payload() values: Array<{ n: number }>) {
        sizes.push(values.length);
        await new Promise((resolve) => setImmediate(resolve));
        seen.push(...values.map((v) => Number(v.n)));
      }
    }
    const pipeline = redis.pipeline();
    for (let n = 0; n < 40; n++) pipeline.xadd(stream, '*', 'n', String(n));
    await pipeline.exec();
    const { app } = await startMicroservice([Ledger], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    await waitFor(() => seen.length === 40, 'all 40 entries');
    expect(seen).toEqual(Array.from({ length: 40 }, (_, n) => n));
    expect(Math.max(...sizes)).toBe(7);
  });

  it('a thrown error acks nothing and retries each entry with its own delivery count (a replayed one included)', async () => {
    const stream = unique('batch-throw');
    // Entry p was read by this consumer before a "crash": its PEL replay counts delivery 2.
    const p = await redis.xadd(stream, '*', 'v', 'p');
    await redis.xgroup('CREATE', stream, 'nest', '0');
    await redis.xreadgroup('GROUP', 'nest', 'me', 'COUNT', 1, 'STREAMS', stream, '>');
    const q = await redis.xadd(stream, '*', 'v', 'q');
    const r = await redis.xadd(stream, '*', 'v', 'r');
    const calls: Call[] = [];
    let acksBeforeRetry = -1;
    @Controller()
    class Ledger {
      @EventPattern(streamPattern(stream), { batch: { maxSize: 3, maxWaitMs: 5_000 } })
      async record(@Payload() values: unknown[], @Ctx() batch: RedisStreamsBatchContext) {
        calls.push(record(values, batch));
        if (calls.length === 1) throw new Error('database unavailable');
        acksBeforeRetry = await pendingCount(redis, stream, 'nest');
      }
    }
    const { app } = await startMicroservice([Ledger], { ...fastRetry, consumer: 'me' });
    closers.push(() => app.close());
    await waitFor(async () => calls.length === 2 && (await pendingCount(redis, stream, 'nest')) === 0, 'the retried batch');
    const counts = (call: Call) => Object.fromEntries(call.ids.map((id, i) => [id, call.deliveries[i]]));
    expect(calls[0]).toMatchObject({ ids: [p, q, r], deliveries: [2, 1, 1] });
    // Each retried after its own back-off (p's is twice q's and r's), all three in one batch.
    expect(counts(calls[1])).toEqual({ [p!]: 3, [q!]: 2, [r!]: 2 });
    expect(acksBeforeRetry).toBe(3); // nothing of the failed batch was acked
  });

  it('batch.fail(index | id): successes acked in one call, failures retried with back-off, parked at maxDeliveries; NonRetryableError parks at once', async () => {
    const stream = unique('batch-fail');
    const calls: Call[] = [];
    @Controller()
    class Ledger {
      @EventPattern(streamPattern(stream), { maxDeliveries: 2, batch: { maxSize: 4, maxWaitMs: 100 } })
      record(@Payload() values: Array<{ v: string }>, @Ctx() batch: RedisStreamsBatchContext) {
        calls.push(record(values, batch));
        values.forEach(({ v }, i) => {
          if (v === 'b') batch.fail(i, new TypeError('b is broken'));
          if (v === 'c') batch.fail(batch.getEntry(i).getEntryId(), new NonRetryableError('c is invalid'));
        });
      }
    }
    const ids: Record<string, string> = {};
    for (const v of ['a', 'b', 'c', 'd']) ids[v] = (await redis.xadd(stream, '*', 'v', v))!;
    const { app, server } = await startMicroservice([Ledger], { ...fastRetry, consumer: 'me' });
    closers.push(() => app.close());
    const acked: number[] = [];
    server.events.on('acked', ({ count }) => acked.push(count));
    const dlq = DeadLetterService.streamFor(stream);
    await waitFor(
      async () => (await redis.xlen(dlq)) === 2 && (await pendingCount(redis, stream, 'nest')) === 0,
      'b and c parked',
    );
    expect(calls[0]).toMatchObject({ ids: [ids.a, ids.b, ids.c, ids.d], deliveries: [1, 1, 1, 1] });
    expect(calls.slice(1)).toEqual([{ payloads: [{ v: 'b' }], ids: [ids.b], deliveries: [2] }]);
    expect(acked[0]).toBe(2); // a and d, in one ack call
    const { items } = await deadLetters.list(dlq);
    const byId = Object.fromEntries(items.map((item) => [item.originalId, item]));
    expect(byId[ids.c]).toMatchObject({ reason: 'non-retryable', deliveries: 1, error: 'c is invalid' });
    expect(byId[ids.b]).toMatchObject({ reason: 'max-deliveries', deliveries: 2, errorClass: 'TypeError' });
  }, 15_000);

  it('fail() rejects an unknown entry and calls after the handler finished, naming the fix', async () => {
    const stream = unique('batch-fail-misuse');
    const errors: string[] = [];
    let kept: RedisStreamsBatchContext | null = null;
    @Controller()
    class Ledger {
      @EventPattern(streamPattern(stream), { batch: { maxSize: 2 } })
      record(@Payload() _values: unknown[], @Ctx() batch: RedisStreamsBatchContext) {
        for (const which of [5, 'no-such-id']) {
          try {
            batch.fail(which);
          } catch (err) {
            errors.push((err as Error).message);
          }
        }
        kept = batch;
      }
    }
    await redis.xadd(stream, '*', 'v', '1');
    const { app } = await startMicroservice([Ledger], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    await waitFor(async () => kept !== null && (await pendingCount(redis, stream, 'nest')) === 0, 'the batch');
    expect(errors[0]).toMatch(/no entry 5\. Pass an index from 0 to 0/);
    expect(errors[1]).toMatch(/no entry "no-such-id"/);
    expect(() => kept!.fail(0)).toThrow(/after the batch handler finished/);
  });

  it('refuses a batch on a @MessagePattern handler at listen(), naming the fix', async () => {
    const stream = unique('batch-request');
    @Controller()
    class Quotes {
      @MessagePattern(streamPattern(stream), { batch: { maxSize: 10 } })
      quote(@Payload() _requests: unknown[]) {
        return 1;
      }
    }
    await expect(startMicroservice([Quotes], { reclaimIntervalMs: 0 })).rejects.toThrow(
      /requests cannot be batched\. Use @EventPattern for batch handlers, or remove "batch"/,
    );
  });
});
