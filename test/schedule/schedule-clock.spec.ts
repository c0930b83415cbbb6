import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { performance } from 'node:perf_hooks';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsContext, ScheduleMover } from 'nest-redis-streams';
import { clientContext } from '../client/client-fixture.js';
import { redisClient, startMicroservice, unique, waitFor } from '../support/helpers.js';
import { scheduleKeysOf } from '../../libs/nest-redis-streams/src/keys/index.js';
import { scheduleEntry, summarizeSchedule } from '../../libs/nest-redis-streams/src/schedule/index.js';

const silent = { warn: () => undefined, log: () => undefined };
const realNow = Date.now.bind(Date);

/** This process' clock set `offsetMs` off (negative: behind), as on a host whose clock is wrong; undone after each test. */
function skewClock(offsetMs: number): void {
  jest.spyOn(Date, 'now').mockImplementation(() => realNow() + offsetMs);
}

/** Redis' clock (ms since epoch). */
async function redisTime(redis: import('ioredis').Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000);
}

// Waits are bounded by the conditions they wait for; a busy machine needs more than Jest's 5 s.
jest.setTimeout(30_000);

describe("delays count from Redis' clock, not the producer's", () => {
  const { redis, closers, client } = clientContext();
  afterEach(() => jest.restoreAllMocks());

  it('a delayed emit from a producer whose clock is 30 s behind waits its delayMs, no less', async () => {
    const stream = unique('clock-emit');
    const arrivals: number[] = [];
    @Controller()
    class Arrivals {
      @EventPattern(stream)
      handle() {
        arrivals.push(performance.now());
      }
    }
    const { app } = await startMicroservice([Arrivals], { scheduleCheckMs: 50 });
    closers.push(() => app.close());
    const producer = client();
    await lastValueFrom(producer.emit(unique('warm-up'), { n: 0 }));

    // Only the producer's reading of its clock is off: emit() takes its delay when called.
    skewClock(-30_000);
    const sentAt = performance.now();
    const emitted = producer.emit(stream, { n: 1 }, { delayMs: 2_000 });
    jest.restoreAllMocks();
    const eventId = await lastValueFrom(emitted);

    const due = Number(await redis.zscore(scheduleKeysOf(stream).due, eventId));
    expect(due).toBeGreaterThanOrEqual((await redisTime(redis)) + 1_000);
    await waitFor(() => arrivals.length === 1, 'the delayed entry to arrive');
    expect(arrivals[0] - sentAt).toBeGreaterThanOrEqual(1_950);
  });

  it("deliverAt stays the caller's own time", async () => {
    const stream = unique('clock-deliver-at');
    skewClock(-30_000);
    const deliverAt = Date.now() + 60_000;
    await lastValueFrom(client().emit(stream, { n: 2 }, { deliverAt }));

    expect((await summarizeSchedule(redis, stream)).nextDueAt).toBe(deliverAt);
  });

  it('a long RetryLater in a consumer whose clock is 30 s behind waits its delay, no less', async () => {
    const stream = unique('clock-retry');
    const runs: number[] = [];
    @Controller()
    class RetryOnce {
      @EventPattern(stream)
      handle(@Payload() _data: unknown, @Ctx() ctx: RedisStreamsContext) {
        runs.push(performance.now());
        if (runs.length === 1) ctx.retryLater(2_000);
      }
    }
    // The whole consumer runs on the skewed clock, as on a host whose clock is wrong.
    skewClock(-30_000);
    const { app } = await startMicroservice([RetryOnce], { minIdleTimeMs: 500, reclaimIntervalMs: 100, scheduleCheckMs: 50 });
    closers.push(() => app.close());
    await redis.xadd(stream, '*', 'v', 'nrs/1', 'event_id', 'clock-1', 'data', '{}');

    await waitFor(() => runs.length === 2, 'the retried copy to run');
    expect(runs[1] - runs[0]).toBeGreaterThanOrEqual(1_950);
  });

  it('a mover whose clock is ahead waits for the next due time on Redis, not again and again at once', async () => {
    const stream = unique('clock-mover');
    await scheduleEntry(
      redis,
      stream,
      'soon',
      (await redisTime(redis)) + 1_500,
      '',
      ['*'],
      ['v', 'nrs/1', 'event_id', 'soon', 'data', '{}'],
    );
    // The mover's own connection counts its scripts: the server's commandstats also count other
    // test files' scripts on the shared Redis (a busy parallel run saw 44 against a bound of 30).
    const moverRedis = redisClient();
    closers.push(() => moverRedis.quit());
    let scripts = 0;
    const send = moverRedis.sendCommand.bind(moverRedis);
    moverRedis.sendCommand = ((command: { name: string }) => {
      if (/^eval/i.test(command.name)) scripts += 1;
      return send(command as never);
    }) as typeof moverRedis.sendCommand;
    skewClock(30_000);
    const mover = new ScheduleMover(moverRedis, [stream], { checkMs: 1_000, batch: 10, idmp: false }, silent);
    mover.start();
    closers.push(() => mover.stop());

    await waitFor(async () => (await redis.xlen(stream)) === 1, 'the entry to be moved when due');
    // About two rounds (at start, when due): a spinning mover runs hundreds.
    expect(scripts).toBeLessThan(30);
  });
});
