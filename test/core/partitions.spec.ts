import {
  type CallHandler,
  Controller,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  UseInterceptors,
} from '@nestjs/common';
import { Ctx, EventPattern, type MessageHandler, Payload } from '@nestjs/microservices';
import {
  DeadLetterService,
  RedisStreamsContext,
  RedisStreamsServer,
  partitionOf,
  partitionStream,
  partitionStreams,
} from 'nest-redis-streams';
import { slotOf } from '../../libs/nest-redis-streams/src/keys/index.js';
import { pendingCount, redisUrl, startMicroservice, unique, waitFor, testContext } from '../support/helpers.js';

describe('partitioned streams and per-key ordering', () => {
  const { redis, closers } = testContext();

  it('consumes every partition of a pattern with one handler and group', async () => {
    const stream = unique('partitioned');
    const seen: Array<[string, string]> = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { partitions: 3, group: 'g' })
      handle(@Payload() data: { n: string }, @Ctx() ctx: RedisStreamsContext) {
        seen.push([ctx.getStream(), data.n]);
      }
    }
    const { app, server } = await startMicroservice([Handlers], {});
    closers.push(() => app.close());
    expect(server.getConsumers().map((c) => c.stream)).toEqual([0, 1, 2].map((p) => partitionStream(stream, p)));
    for (let i = 0; i < 30; i++) await redis.xadd(partitionStream(stream, i % 3), '*', 'n', String(i));
    await waitFor(() => seen.length === 30, 'all 30 entries');
    expect(new Set(seen.map(([s]) => s)).size).toBe(3);
  });

  it("tags partition keys with stream and partition: streams spread over slots, each dead-letter stream shares its partition's slot", () => {
    // Tagging with the partition number alone (`orders:{3}`) put partition k of every stream in one slot.
    const orders = partitionStreams('orders', 6);
    const payments = partitionStreams('payments', 6);
    expect(orders[3]).toBe('orders:{orders:3}');
    for (let p = 0; p < 6; p++) expect(slotOf(orders[p])).not.toBe(slotOf(payments[p]));
    expect(new Set([...orders, ...payments].map(slotOf)).size).toBe(12);
    for (const partition of [...orders, ...payments]) {
      const deadLetters = DeadLetterService.streamFor(partition, true);
      expect(deadLetters).toBe(`${partition}:dlq`);
      expect(slotOf(deadLetters)).toBe(slotOf(partition));
    }
    // Braces in a stream name cannot cut the tag short and drop the partition number from it.
    expect(new Set([0, 1, 2].map((p) => slotOf(partitionStream('odd}name', p)))).size).toBe(3);
  });

  it('maps a key to the same partition every time, spread over all partitions', () => {
    const keys = Array.from({ length: 1000 }, (_, i) => `customer-${i}`);
    const counts = [0, 0, 0, 0];
    for (const key of keys) counts[partitionOf(key, 4)]++;
    expect(keys.every((k) => partitionOf(k, 4) === partitionOf(k, 4))).toBe(true);
    expect(Math.min(...counts)).toBeGreaterThan(150);
  });

  it('keeps entries of one key in order with concurrency 16, while keys run in parallel', async () => {
    const stream = unique('ordered');
    const byKey = new Map<string, number[]>();
    let running = 0;
    let peak = 0;
    @Controller()
    class Handlers {
      @EventPattern(stream, { concurrency: 16, orderingKey: 'k' })
      async handle(@Payload() data: { k: string; seq: string }) {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, Number(data.seq) % 3));
        byKey.set(data.k, [...(byKey.get(data.k) ?? []), Number(data.seq)]);
        running--;
      }
    }
    const { app } = await startMicroservice([Handlers], {});
    closers.push(() => app.close());
    const pipeline = redis.pipeline();
    for (let seq = 0; seq < 400; seq++) pipeline.xadd(stream, '*', 'k', `key-${seq % 10}`, 'seq', String(seq));
    await pipeline.exec();
    await waitFor(() => [...byKey.values()].reduce((n, l) => n + l.length, 0) === 400, 'all 400 entries', 20_000);
    for (const seqs of byKey.values()) expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(peak).toBeGreaterThan(1);
    expect(peak).toBeLessThanOrEqual(10);
  });
  it('keeps one key in order when an interceptor makes the handler an Observable', async () => {
    // With any interceptor bound, Nest hands back a cold Observable and the method runs only when
    // it is subscribed: the ordering must last until that Observable completes.
    const stream = unique('ordered-intercepted');
    const log: string[] = [];
    @Injectable()
    class PassThrough implements NestInterceptor {
      intercept(_context: ExecutionContext, next: CallHandler) {
        return next.handle();
      }
    }
    @Controller()
    class Handlers {
      @UseInterceptors(PassThrough)
      @EventPattern(stream, { concurrency: 8, orderingKey: 'k' })
      async handle(@Payload() data: { k: string; seq: string }) {
        log.push(`start ${data.seq}`);
        await new Promise((r) => setTimeout(r, 30));
        log.push(`end ${data.seq}`);
      }
    }
    const { app } = await startMicroservice([Handlers], {});
    closers.push(() => app.close());
    for (const seq of ['1', '2', '3']) await redis.xadd(stream, '*', 'k', 'same', 'seq', seq);
    await waitFor(() => log.length === 6, 'three entries handled');
    expect(log).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3']);
  });

  it('acks an entry with an ordering key whose hand-registered handler returns nothing', async () => {
    const stream = unique('ordered-plain');
    const seen: string[] = [];
    const server = new RedisStreamsServer({ connection: redisUrl(), reclaimIntervalMs: 0 });
    server.addHandler(
      stream,
      ((data: { k: string; n: string }) => {
        seen.push(data.n);
      }) as unknown as MessageHandler,
      true,
      { orderingKey: 'k' },
    );
    await new Promise<void>((resolve, reject) => void server.listen((err) => (err ? reject(err) : resolve())));
    closers.push(() => server.close());
    const failed: unknown[] = [];
    server.events.on('failed', (event) => failed.push(event));
    for (const n of ['1', '2']) await redis.xadd(stream, '*', 'k', 'a', 'n', n);
    await waitFor(async () => seen.length === 2 && (await pendingCount(redis, stream, 'nest')) === 0, 'both entries acked');
    expect(seen).toEqual(['1', '2']);
    expect(failed).toEqual([]);
  });
});
