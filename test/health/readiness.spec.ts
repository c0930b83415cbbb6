import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { HealthCheckService, HealthIndicatorService, TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import type { Redis } from 'ioredis';
import { RedisStreamsHealthIndicator, RedisStreamsServer, collectStreamStats } from 'nest-redis-streams';
import { pendingCount, redisClient, startMicroservice, unique, waitFor } from '../support/helpers.js';

jest.setTimeout(30_000);

/** A controller whose handler records what it got, for one stream. */
function recorder(stream: string, seen: unknown[], gate?: Promise<void>) {
  @Controller()
  class Recorder {
    @EventPattern(stream)
    async handle(@Payload() data: unknown) {
      seen.push(data);
      await gate;
    }
  }
  return Recorder;
}

describe('RedisStreamsHealthIndicator.isReady', () => {
  let redis: Redis;
  const indicator = new RedisStreamsHealthIndicator(new HealthIndicatorService());
  const closers: Array<() => Promise<unknown>> = [];
  beforeAll(() => {
    redis = redisClient();
  });
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });
  afterAll(() => redis.quit());

  it('is up on a healthy group and reports its figures', async () => {
    const stream = unique('ready-up');
    const seen: unknown[] = [];
    const { app, server } = await startMicroservice([recorder(stream, seen)], {});
    closers.push(() => app.close());
    for (let i = 0; i < 3; i++) await redis.xadd(stream, '*', 'n', String(i));
    await waitFor(() => seen.length === 3, 'three entries handled');
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'the acks');

    const result = await indicator.isReady('redis-streams', server);

    expect(result['redis-streams']).toEqual({
      status: 'up',
      streams: [
        {
          stream,
          group: 'nest',
          status: 'up',
          pending: 0,
          oldestIdleMs: 0,
          lag: 0,
          consumers: 1,
          deadLetters: 0,
          groupDeadLetters: 0,
          deadLetterStream: `${stream}:dlq`,
          readLoopAgeMs: expect.any(Number),
          oldestRunningMs: 0,
        },
      ],
      capabilities: expect.objectContaining({ claim: expect.any(Boolean), idmp: expect.any(Boolean) }),
    });
    expect(result['redis-streams'].capabilities.nodes).toEqual([
      expect.objectContaining({ server: expect.stringMatching(/^(redis|valkey)$/), version: expect.stringMatching(/^\d+\.\d+/) }),
    ]);
    expect(result['redis-streams'].reason).toBeUndefined();
  });

  it('is down when an entry stays pending longer than maxOldestIdleMs, and names stream, group, figure and limit', async () => {
    const stream = unique('ready-idle');
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    await redis.xadd(stream, '*', 'n', '1');
    // A consumer that read the entry and then hung: it never acks.
    await redis.xreadgroup('GROUP', 'nest', 'ghost', 'COUNT', 1, 'STREAMS', stream, '>');
    // No reclaimer: the entry must stay with the ghost for the check to see it.
    const { app, server } = await startMicroservice([recorder(stream, [])], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());

    const result = await waitFor(async () => {
      const r = await indicator.isReady('redis-streams', server, { maxOldestIdleMs: 200 });
      return r['redis-streams'].status === 'down' ? r : null;
    }, 'readiness to fail on the idle entry');

    const [report] = result['redis-streams'].streams;
    expect(report).toMatchObject({ stream, group: 'nest', status: 'down', pending: 1, consumers: 2 });
    expect(report.oldestIdleMs).toBeGreaterThan(200);
    expect(report.reason).toBe(
      `Stream "${stream}" group "nest": the oldest pending idle time is ${report.oldestIdleMs} ms, above maxOldestIdleMs 200 ms.`,
    );
    expect(result['redis-streams'].reason).toBe(report.reason);

    // A per-stream override replaces the general threshold.
    const relaxed = await indicator.isReady('redis-streams', server, {
      maxOldestIdleMs: 200,
      overrides: [{ stream, group: 'nest', maxOldestIdleMs: 3_600_000 }],
    });
    expect(relaxed['redis-streams'].status).toBe('up');
  });

  it('is degraded (not down) with dead letters, and Terminus reports the check as degraded', async () => {
    const stream = unique('ready-dlq');
    const { app, server } = await startMicroservice([recorder(stream, [])], {});
    closers.push(() => app.close());
    await redis.xadd(`${stream}:dlq`, '*', 'dlq:reason', 'max-deliveries', 'dlq:group', 'nest');
    await redis.xadd(`${stream}:dlq`, '*', 'dlq:reason', 'max-deliveries', 'dlq:group', 'nest');

    const moduleRef = await Test.createTestingModule({
      imports: [TerminusModule],
      providers: [RedisStreamsHealthIndicator],
    }).compile();
    closers.push(() => moduleRef.close());
    const health = moduleRef.get(HealthCheckService);
    const injected = moduleRef.get(RedisStreamsHealthIndicator);
    const check = (maxDeadLetters?: number) =>
      health.check([() => injected.isReady('redis-streams', server, { maxDeadLetters })]);

    const degraded = await check();
    expect(degraded.status).toBe('degraded');
    expect(degraded.details['redis-streams'].status).toBe('degraded');
    expect(degraded.details['redis-streams'].reason).toBe(
      `Stream "${stream}" group "nest": the number of its entries in dead-letter stream "${stream}:dlq" is 2, above maxDeadLetters 0.`,
    );
    expect((await check(5)).status).toBe('ok');
  });

  it('charges dead letters to the group that parked them, not to every group of the stream', async () => {
    const stream = unique('ready-dlq-groups');
    @Controller()
    class TwoGroups {
      @EventPattern(stream, { group: 'payments' })
      pay() {}
      @EventPattern(stream, { group: 'inventory' })
      reserve() {}
    }
    const { app, server } = await startMicroservice([TwoGroups], {});
    closers.push(() => app.close());
    for (let i = 0; i < 3; i++) await redis.xadd(`${stream}:dlq`, '*', 'dlq:reason', 'non-retryable', 'dlq:group', 'payments');

    const result = await indicator.isReady('redis-streams', server);
    const byGroup = Object.fromEntries(result['redis-streams'].streams.map((s: { group: string }) => [s.group, s]));
    expect(byGroup.payments).toMatchObject({ status: 'degraded', deadLetters: 3, groupDeadLetters: 3 });
    expect(byGroup.inventory).toMatchObject({ status: 'up', deadLetters: 3, groupDeadLetters: 0 });
    expect(result['redis-streams'].reason).toBe(
      `Stream "${stream}" group "payments": the number of its entries in dead-letter stream "${stream}:dlq" is 3, above maxDeadLetters 0.`,
    );

    // A record without a group (written by hand) is not hidden: it counts for every group.
    await redis.xadd(`${stream}:dlq`, '*', 'note', 'parked by an operator');
    const after = await indicator.isReady('redis-streams', server);
    const inventory = after['redis-streams'].streams.find((s: { group: string }) => s.group === 'inventory');
    expect(inventory).toMatchObject({ status: 'degraded', groupDeadLetters: 1 });
  });

  it('falls back to the whole dead-letter stream, and says so, when it is too long to count per group', async () => {
    const stream = unique('ready-dlq-long');
    const { app, server } = await startMicroservice([recorder(stream, [])], {});
    closers.push(() => app.close());
    const pipeline = redis.pipeline();
    for (let i = 0; i < 101; i++)
      pipeline.xadd(`${stream}:dlq`, '*', 'dlq:reason', 'max-deliveries', 'dlq:group', 'someone-else');
    await pipeline.exec();

    const result = await indicator.isReady('redis-streams', server);
    expect(result['redis-streams'].streams[0]).toMatchObject({ status: 'degraded', deadLetters: 101, groupDeadLetters: null });
    expect(result['redis-streams'].reason).toBe(
      `Stream "${stream}" group "nest": the length of dead-letter stream "${stream}:dlq" (all groups; too long to count per group) is 101, above maxDeadLetters 0.`,
    );
  });

  it('reports the lag of entries added while no consumer runs, fails maxLag, and reaches 0 once consumers catch up', async () => {
    const stream = unique('ready-lag');
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    for (let i = 0; i < 5; i++) await redis.xadd(stream, '*', 'n', String(i));

    const idle = await collectStreamStats(redis, stream, 'nest', `${stream}:dlq`);
    expect(idle).toEqual({
      stream,
      group: 'nest',
      deadLetterStream: `${stream}:dlq`,
      pending: 0,
      oldestIdleMs: 0,
      lag: 5,
      deadLetters: 0,
      groupDeadLetters: 0,
      consumers: 0,
    });

    // One entry at a time, held by a handler until released: four stay undelivered.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const seen: unknown[] = [];
    const { app, server } = await startMicroservice([recorder(stream, seen, gate)], { concurrency: 1, prefetchCount: 1 });
    closers.push(() => app.close());
    await waitFor(() => seen.length === 1, 'the first entry');

    const behind = await indicator.isReady('redis-streams', server, { maxLag: 2 });
    expect(behind['redis-streams'].status).toBe('down');
    expect(behind['redis-streams'].streams[0]).toMatchObject({ lag: 4, pending: 1 });
    expect(behind['redis-streams'].reason).toBe(
      `Stream "${stream}" group "nest": the lag (entries not yet delivered) is 4, above maxLag 2.`,
    );

    release();
    const caughtUp = await waitFor(async () => {
      const r = await indicator.isReady('redis-streams', server, { maxLag: 2 });
      // Pending is also 0 between one entry's ack and the next read: wait for all five and no lag.
      const figures = r['redis-streams'].streams[0];
      return seen.length === 5 && figures.pending === 0 && figures.lag === 0 ? r : null;
    }, 'the consumer to catch up');
    expect(caughtUp['redis-streams'].status).toBe('up');
    expect(caughtUp['redis-streams'].streams[0]).toMatchObject({ lag: 0, pending: 0 });
    expect(seen).toHaveLength(5);
  });

  it('is down with an explanation before the server listens', async () => {
    const server = new RedisStreamsServer({});
    const result = await indicator.isReady('redis-streams', server);
    expect(result['redis-streams'].status).toBe('down');
    expect(result['redis-streams'].reason).toMatch(/not listening yet/);
  });

  it('collectStreamStats rejects with a clear message when the group does not exist', async () => {
    const stream = unique('ready-nogroup');
    await redis.xadd(stream, '*', 'n', '1');
    await expect(collectStreamStats(redis, stream, 'missing', `${stream}:dlq`)).rejects.toThrow(
      `Stream "${stream}" has no consumer group "missing"`,
    );
    await expect(collectStreamStats(redis, unique('ready-nokey'), 'nest', 'x:dlq')).rejects.toThrow(
      'has no consumer group "nest"',
    );
  });
});
