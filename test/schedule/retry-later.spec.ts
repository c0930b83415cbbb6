import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsContext, RetryLater } from 'nest-redis-streams';
import { pendingCount, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';
import { retryMember, scheduleKeysOf } from '../../libs/nest-redis-streams/src/keys/index.js';

interface Run {
  entryId: string;
  eventId?: string;
  deliveries: number;
  at: number;
}

/** A handler that asks for a retry `delays.length` times (one delay per run), then succeeds. */
function retryingController(stream: string, delays: Array<number | 'ctx'>, runs: Run[], ctxDelayMs = 0) {
  @Controller()
  class Retrying {
    @EventPattern(stream)
    handle(@Payload() _data: unknown, @Ctx() ctx: RedisStreamsContext) {
      runs.push({ entryId: ctx.getEntryId(), eventId: ctx.getEventId(), deliveries: ctx.getDeliveryCount(), at: Date.now() });
      const delay = delays[runs.length - 1];
      if (delay === 'ctx') ctx.retryLater(ctxDelayMs);
      if (typeof delay === 'number') throw new RetryLater(delay);
    }
  }
  return Retrying;
}

// Waits are bounded by the conditions they wait for; a busy machine needs more than Jest's 5 s.
jest.setTimeout(30_000);

describe('RetryLater', () => {
  const { redis, closers } = testContext();

  it('a short delay waits in the pending list and uses no delivery of the budget (maxDeliveries 1)', async () => {
    const stream = unique('retry-short');
    const runs: Run[] = [];
    const parked: unknown[] = [];
    const { app, server } = await startMicroservice([retryingController(stream, [300, 'ctx'], runs, 200)], {
      reclaimIntervalMs: 50,
      minIdleTimeMs: 2_000,
      maxDeliveries: 1,
    });
    closers.push(() => app.close());
    server.events.on('dead-lettered', (e) => parked.push(e));
    await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'e-short', 'data', '{}');

    await waitFor(() => runs.length === 3, 'the third run', 15_000);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the ack after the third run');

    expect(runs.map((r) => r.deliveries)).toEqual([1, 1, 1]);
    expect(new Set(runs.map((r) => r.entryId)).size).toBe(1);
    expect(runs[1].at - runs[0].at).toBeGreaterThanOrEqual(300);
    expect(runs[2].at - runs[1].at).toBeGreaterThanOrEqual(200);
    expect(parked).toEqual([]);
    expect(await redis.exists(`${stream}:dlq`)).toBe(0);
  });

  it('a delay past minIdleTimeMs moves a copy (same fields and event id) to the schedule and acks the original', async () => {
    const stream = unique('retry-long');
    const runs: Run[] = [];
    const otherGroup: string[] = [];
    @Controller()
    class OtherGroup {
      @EventPattern(stream, { group: 'audit' })
      handle(@Ctx() ctx: RedisStreamsContext) {
        otherGroup.push(ctx.getEntryId());
      }
    }
    const { app } = await startMicroservice([retryingController(stream, [1_200], runs), OtherGroup], {
      reclaimIntervalMs: 100,
      minIdleTimeMs: 500,
      maxDeliveries: 1,
      scheduleCheckMs: 100,
    });
    closers.push(() => app.close());
    const original = await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'e-long', 'data', '{"n":1}', 'custom', 'kept');

    const member = retryMember(original!, 'nest');
    await waitFor(async () => (await redis.zscore(scheduleKeysOf(stream).due, member)) !== null, 'the copy in the schedule');
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
    await waitFor(() => runs.length === 2, 'the run of the moved copy', 15_000);

    expect(runs[1]).toMatchObject({ eventId: 'e-long', deliveries: 1 });
    expect(runs[1].entryId).not.toBe(original);
    expect(runs[1].at - runs[0].at).toBeGreaterThanOrEqual(1_200);
    const [, copy] = (await redis.xrange(stream, runs[1].entryId, runs[1].entryId))[0];
    expect(copy).toEqual(['v', 'nrs/1', 'event_id', 'e-long', 'data', '{"n":1}', 'custom', 'kept', 'nrs:group', 'nest']);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the copy to be acked');
    // The other group ran the original only: the copy is for the group that asked for the retry.
    await waitFor(async () => (await pendingCount(redis, stream, 'audit')) === 0, 'the other group to ack the copy unhandled');
    expect(otherGroup).toEqual([original]);
  });

  it('refuses a negative or non-numeric delay with a clear error, which counts as an ordinary failure', () => {
    expect(() => new RetryLater(-5)).toThrow(/RetryLater: delayMs must be a number of milliseconds from 0 to \d+, got -5/);
    expect(() => new RetryLater(Number.NaN)).toThrow(/got null/);
    expect(() => new RetryLater(new Date('nope'))).toThrow(/deliverAt must be a valid Date/);
    expect(new RetryLater(new Date(Date.now() - 1_000)).retryAt).toBeLessThanOrEqual(Date.now());
  });
});
