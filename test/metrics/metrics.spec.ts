import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { RedisStreamsMetrics } from 'nest-redis-streams';
import { Registry } from 'prom-client';
import { loadPromClient } from '../../libs/nest-redis-streams/src/metrics/prom-client.loader.js';
import {
  pendingCount,
  redisClient,
  startMicroservice,
  unique,
  waitFor,
  HANDLER_PATHS,
  runHandlersOn,
} from '../support/helpers.js';

jest.setTimeout(30_000);

/** Sum of a metric's samples matching the labels (`series` picks e.g. a histogram's `_count`). */
async function valueOf(registry: Registry, name: string, labels: Record<string, string>, series = name): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return Number.NaN;
  const { values } = await metric.get();
  return (
    values
      .filter((v) => ((v as { metricName?: string }).metricName ?? name) === series)
      // Bucket bounds (`le`) come back as numbers; every other label as a string.
      .filter((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l))
      .reduce((sum, v) => sum + v.value, 0)
  );
}

describe.each(HANDLER_PATHS)('RedisStreamsMetrics (%s path)', (path) => {
  runHandlersOn(path);
  let redis: Redis;
  const closers: Array<() => unknown> = [];
  beforeAll(() => {
    redis = redisClient();
  });
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });
  afterAll(() => redis.quit());

  it('counts every entry of a run: 500 delivered, 500 acked, 500 handler durations and latencies', async () => {
    const stream = unique('metrics-run');
    let handled = 0;
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle() {
        handled++;
      }
    }
    const { app, server } = await startMicroservice([Handlers], { concurrency: 8 });
    closers.push(() => app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0 });
    closers.push(() => metrics.close());

    const pipeline = redis.pipeline();
    for (let i = 0; i < 500; i++) pipeline.xadd(stream, '*', 'n', String(i));
    await pipeline.exec();
    const labels = { stream, group: 'nest' };
    await waitFor(async () => (await valueOf(registry, 'redis_streams_entries_acked_total', labels)) === 500, '500 acks counted');

    expect(handled).toBe(500);
    expect(await valueOf(registry, 'redis_streams_entries_delivered_total', labels)).toBe(500);
    expect(await valueOf(registry, 'redis_streams_entries_failed_total', labels)).toBe(0);
    expect(
      await valueOf(
        registry,
        'redis_streams_handler_duration_seconds',
        { ...labels, outcome: 'ok' },
        'redis_streams_handler_duration_seconds_count',
      ),
    ).toBe(500);
    expect(
      await valueOf(
        registry,
        'redis_streams_end_to_end_latency_seconds',
        labels,
        'redis_streams_end_to_end_latency_seconds_count',
      ),
    ).toBe(500);

    await metrics.sampleNow();
    expect(await valueOf(registry, 'redis_streams_pending_entries', labels)).toBe(0);
    expect(await valueOf(registry, 'redis_streams_consumer_lag_entries', labels)).toBe(0);
    expect(await valueOf(registry, 'redis_streams_dead_letter_entries', labels)).toBe(0);
  });

  it("counts failures and dead letters by reason, and samples each group's dead letters", async () => {
    const stream = unique('metrics-fail');
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle(@Payload() data: { bad?: string }) {
        if (data.bad) throw new Error('bad entry');
      }
      // A second group of the same stream that takes everything: none of the dead letters are its.
      @EventPattern(stream, { group: 'audit' })
      audit() {}
    }
    // One delivery: a failure is dead-lettered at once.
    const { app, server } = await startMicroservice([Handlers], { maxDeliveries: 1 });
    closers.push(() => app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, prefix: 'orders_', sampleIntervalMs: 0 });
    closers.push(() => metrics.close());

    for (let i = 0; i < 10; i++) await redis.xadd(stream, '*', ...(i % 5 === 0 ? ['bad', '1'] : ['n', String(i)]));
    const labels = { stream, group: 'nest' };
    await waitFor(async () => (await valueOf(registry, 'orders_entries_acked_total', labels)) === 8, 'eight acks');
    await waitFor(async () => (await valueOf(registry, 'orders_entries_dead_lettered_total', labels)) === 2, 'two dead letters');

    expect(await valueOf(registry, 'orders_entries_delivered_total', labels)).toBe(10);
    expect(await valueOf(registry, 'orders_entries_failed_total', labels)).toBe(2);
    expect(await valueOf(registry, 'orders_entries_dead_lettered_total', { ...labels, reason: 'max-deliveries' })).toBe(2);
    expect(await valueOf(registry, 'orders_entries_lost_by_trim_total', labels)).toBe(0);
    expect(
      await valueOf(
        registry,
        'orders_handler_duration_seconds',
        { ...labels, outcome: 'error' },
        'orders_handler_duration_seconds_count',
      ),
    ).toBe(2);
    expect(await valueOf(registry, 'orders_end_to_end_latency_seconds', labels, 'orders_end_to_end_latency_seconds_count')).toBe(
      8,
    );

    await metrics.sampleNow(server);
    expect(await valueOf(registry, 'orders_dead_letter_entries', labels)).toBe(2);
    expect(await valueOf(registry, 'orders_dead_letter_entries', { stream, group: 'audit' })).toBe(0);
  });

  it('observes how many deliveries an entry needed until it succeeded', async () => {
    const stream = unique('metrics-deliveries');
    const attempts = new Map<string, number>();
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle(@Payload() data: { n: string; flaky?: string }) {
        const attempt = (attempts.get(data.n) ?? 0) + 1;
        attempts.set(data.n, attempt);
        if (data.flaky && attempt < 3) throw new Error('downstream timeout');
      }
    }
    const { app, server } = await startMicroservice([Handlers], {
      reclaimIntervalMs: 50,
      retryBackoffMs: 10,
      minIdleTimeMs: 1_000,
    });
    closers.push(() => app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0 });
    closers.push(() => metrics.close());

    await redis.xadd(stream, '*', 'n', '1');
    await redis.xadd(stream, '*', 'n', '2', 'flaky', 'yes');
    const labels = { stream, group: 'nest' };
    await waitFor(async () => (await valueOf(registry, 'redis_streams_entries_acked_total', labels)) === 2, 'both entries acked');
    const series = (suffix: string, extra: Record<string, string> = {}) =>
      valueOf(
        registry,
        'redis_streams_deliveries_to_success',
        { ...labels, ...extra },
        `redis_streams_deliveries_to_success_${suffix}`,
      );
    expect(await series('count')).toBe(2);
    expect(await series('sum')).toBe(1 + 3);
    expect(await series('bucket', { le: '1' })).toBe(1);
    expect(await series('bucket', { le: '3' })).toBe(2);
  });

  it('samples pending, oldest idle and lag on its interval', async () => {
    const stream = unique('metrics-gauges');
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    const id = await redis.xadd(stream, '*', 'n', '1');
    await redis.xreadgroup('GROUP', 'nest', 'ghost', 'COUNT', 1, 'STREAMS', stream, '>');
    // The ghost hung ten minutes ago and never acked.
    await redis.xclaim(stream, 'nest', 'ghost', 0, id!, 'IDLE', 600_000, 'JUSTID');
    @Controller()
    class Handlers {
      @EventPattern(stream)
      handle() {}
    }
    const { app, server } = await startMicroservice([Handlers], { reclaimIntervalMs: 0 });
    closers.push(() => app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 20 });
    closers.push(() => metrics.close());

    const labels = { stream, group: 'nest' };
    await waitFor(async () => (await valueOf(registry, 'redis_streams_pending_entries', labels)) === 1, 'the pending gauge');
    expect(await valueOf(registry, 'redis_streams_oldest_pending_idle_seconds', labels)).toBeGreaterThanOrEqual(600);
    expect(await valueOf(registry, 'redis_streams_consumer_lag_entries', labels)).toBe(0);
    expect(await registry.metrics()).toContain(
      '# HELP redis_streams_oldest_pending_idle_seconds Longest idle time among the oldest pending entries',
    );
  });

  it('shares metrics between servers in one registry, and detaches from a server (also once it closed)', async () => {
    const [first, second] = [unique('metrics-a'), unique('metrics-b')];
    const controller = (stream: string) => {
      @Controller()
      class Handlers {
        @EventPattern(stream)
        handle() {}
      }
      return Handlers;
    };
    const a = await startMicroservice([controller(first)], {});
    closers.push(() => a.app.close());
    const b = await startMicroservice([controller(second)], {});
    closers.push(() => b.app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(a.server, { registry, sampleIntervalMs: 0 });
    metrics.attach(b.server, { registry, sampleIntervalMs: 0 });
    closers.push(() => metrics.close());

    await redis.xadd(first, '*', 'n', '1');
    await redis.xadd(second, '*', 'n', '1');
    await waitFor(async () => (await valueOf(registry, 'redis_streams_entries_acked_total', {})) === 2, 'acks of both servers');

    metrics.detach(a.server);
    expect(a.server.events.listenerCount('delivered')).toBe(0);
    expect(b.server.events.listenerCount('delivered')).toBe(1);
    await redis.xadd(first, '*', 'n', '2');
    await waitFor(
      async () => (await pendingCount(redis, first, 'nest')) === 0 && (await redis.xlen(first)) === 2,
      'the second entry',
    );
    expect(await valueOf(registry, 'redis_streams_entries_delivered_total', { stream: first })).toBe(1);

    // A closed server is dropped at its next sample instead of failing on every interval.
    await b.app.close();
    await waitFor(async () => {
      await metrics.sampleNow(b.server);
      return b.server.events.listenerCount('delivered') === 0;
    }, 'the closed server to be detached');
  });

  it('explains how to install prom-client when it is missing', () => {
    const missing = () => {
      throw Object.assign(new Error("Cannot find module 'prom-client'"), { code: 'MODULE_NOT_FOUND' });
    };
    expect(() => loadPromClient(missing)).toThrow(
      'RedisStreamsMetrics needs the optional peer dependency "prom-client" (version 15), which is not installed. ' +
        'Run `npm install prom-client`, or do not call attach().',
    );
    expect(loadPromClient().Counter).toEqual(expect.any(Function));
  });
});
