import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import type { RedisStreamsContext } from 'nest-redis-streams';
import { startMicroservice, testContext, unique, waitFor, HANDLER_PATHS, runHandlersOn } from '../support/helpers.js';

const BACKOFF_MS = 300;

/**
 * A failed entry is retried after retryBackoffMs · 2^(delivery − 1). Back-offs of 10–50 ms (what
 * other tests use) cannot be told from an immediate retry, so this one uses 300 ms and checks
 * that each gap between deliveries is at least the doubled back-off. Lower bounds only, which a
 * slow machine can only make larger: ratios of gaps failed on a busy machine (1.33 for 1.6, at
 * load 15 on 2 cores: the first gap had waited for a late timer). The exact doubling of the
 * scheduled wait is checked without a clock by failure-handler.spec (idle per delivery).
 */
describe.each(HANDLER_PATHS)('retry back-off (%s path)', (path) => {
  runHandlersOn(path);
  const { redis, closers } = testContext();

  it('doubles the wait between deliveries of an entry that keeps failing', async () => {
    const stream = unique('backoff');
    const deliveries: Array<{ at: number; count: number }> = [];
    @Controller()
    class Failing {
      @EventPattern(stream)
      handle(@Ctx() ctx: RedisStreamsContext) {
        deliveries.push({ at: performance.now(), count: ctx.getDeliveryCount() });
        throw new Error('downstream unavailable');
      }
    }
    // min-idle far above every back-off (it caps them); a reclaimer every 20 ms picks up each
    // retry as soon as its back-off has passed.
    const { app, server } = await startMicroservice([Failing], {
      retryBackoffMs: BACKOFF_MS,
      minIdleTimeMs: 60_000,
      reclaimIntervalMs: 20,
      maxDeliveries: 4,
    });
    closers.push(() => app.close());
    const parked = new Promise((resolve) => server.events.once('dead-lettered', resolve));
    await redis.xadd(stream, '*', 'data', '{"n":1}');
    await waitFor(() => deliveries.length === 4, 'four deliveries', 20_000);
    await parked;
    expect(deliveries.map((d) => d.count)).toEqual([1, 2, 3, 4]);
    const gaps = deliveries.slice(1).map((d, i) => d.at - deliveries[i].at);
    gaps.forEach((gap, i) => expect(gap).toBeGreaterThanOrEqual(BACKOFF_MS * 2 ** i - 5));
  }, 30_000);
});
