import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import type { StreamHandlerOptions } from 'nest-redis-streams';
import { pendingCount, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

jest.setTimeout(60_000);

async function fill(redis: Redis, stream: string, entries: number): Promise<void> {
  for (let from = 0; from < entries; from += 1_000) {
    const pipeline = redis.pipeline();
    for (let i = from; i < Math.min(entries, from + 1_000); i++) pipeline.xadd(stream, '*', 'n', String(i));
    await pipeline.exec();
  }
}

/**
 * A handler that runs `before` entries (each taking `msEach`, 0 = synchronously), then holds the
 * next one until `release()`: the consumer then reads ahead as far as its read-ahead lets it.
 */
function holdAfter(stream: string, before: number, msEach: number, options: StreamHandlerOptions = {}) {
  let runs = 0;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  @Controller()
  class Handler {
    @EventPattern(stream, options)
    handle(): Promise<void> | void {
      runs++;
      if (runs > before) return held;
      if (msEach > 0) return new Promise((resolve) => setTimeout(resolve, msEach));
    }
  }
  return { Handler, runs: () => runs, release: () => release() };
}

describe('read-ahead', () => {
  const { redis, closers } = testContext();

  /** Starts the handler on a filled stream and resolves once it holds all it may. */
  async function heldWhenFull(stream: string, handler: ReturnType<typeof holdAfter>, before: number) {
    const group = unique('g');
    const { app, server } = await startMicroservice([handler.Handler], { group });
    closers.push(() => app.close());
    await waitFor(() => handler.runs() > before, 'the handler to hold an entry', 45_000);
    const [consumer] = server.getConsumers();
    await waitFor(() => consumer.room <= 0, 'the consumer to fill its read-ahead');
    // Acks of the entries settled before it are flushed: what is pending is what it holds.
    await waitFor(async () => (await pendingCount(redis, stream, group)) === consumer.heldCount, 'the acks to land');
    return { consumer, pending: await pendingCount(redis, stream, group) };
  }

  it('with no prefetchCount, a fast handler reads further ahead than 64 entries (up to 256)', async () => {
    const stream = unique('ahead-fast');
    await fill(redis, stream, 3_000);
    const handler = holdAfter(stream, 2_000, 0);
    const { consumer, pending } = await heldWhenFull(stream, handler, 2_000);
    expect(pending).toBeGreaterThan(64);
    expect(pending).toBeLessThanOrEqual(256);
    expect(consumer.readAhead).toBe(pending);
    handler.release();
    await waitFor(async () => (await pendingCount(redis, stream, consumer.group)) === 0, 'the rest to be handled');
  });

  it('a prefetchCount the user sets is kept, however fast the handler', async () => {
    const stream = unique('ahead-fixed');
    await fill(redis, stream, 3_000);
    const handler = holdAfter(stream, 2_000, 0, { prefetchCount: 64 });
    const { consumer, pending } = await heldWhenFull(stream, handler, 2_000);
    expect(pending).toBe(64);
    expect(consumer.readAhead).toBe(64);
    handler.release();
  });

  it('a slow handler (a few ms per entry) keeps the read-ahead at 64', async () => {
    const stream = unique('ahead-slow');
    await fill(redis, stream, 600);
    // 300 entries of 3 ms or more each: several windows of 64 measured at that pace.
    const handler = holdAfter(stream, 300, 3);
    const { consumer, pending } = await heldWhenFull(stream, handler, 300);
    expect(pending).toBe(64);
    expect(consumer.readAhead).toBe(64);
    handler.release();
  });
});
