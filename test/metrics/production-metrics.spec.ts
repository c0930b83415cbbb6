import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, RedisStreamsMetrics } from 'nest-redis-streams';
import { Registry } from 'prom-client';
import { parseMemory } from '../../libs/nest-redis-streams/src/metrics/redis-memory.js';
import { redisClient, startMicroservice, unique, waitFor } from '../support/helpers.js';

// CommonJS helper shared with the scripts: a private redis-server with its own settings.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options?: { extraArgs?: string[] }): Promise<{ url: string; port: number; stop(): Promise<void> }>;
};

jest.setTimeout(30_000);

/** Sum of a metric's samples matching the labels (`series` picks e.g. a histogram's `_count`). */
async function valueOf(registry: Registry, name: string, labels: Record<string, string>, series = name): Promise<number> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return Number.NaN;
  const { values } = await metric.get();
  const matching = values
    .filter((v) => ((v as { metricName?: string }).metricName ?? name) === series)
    .filter((v) => Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l));
  return matching.length === 0 ? Number.NaN : matching.reduce((sum, v) => sum + v.value, 0);
}

function handlers(stream: string) {
  @Controller()
  class Handlers {
    @EventPattern(stream)
    handle() {}
  }
  return Handlers;
}

describe('metrics for the operations table', () => {
  const closers: Array<() => unknown> = [];
  let redis: Redis;
  beforeAll(() => {
    redis = redisClient();
  });
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });
  afterAll(() => redis.quit());

  it('samples stream length, consumers, minIdleTimeMs and the Redis node memory (used_memory, maxmemory)', async () => {
    const own = await startRedis({ extraArgs: ['--maxmemory', '64mb'] });
    closers.push(() => own.stop());
    const stream = unique('metrics-length');
    const { app, server } = await startMicroservice([handlers(stream)], { connection: own.url, minIdleTimeMs: 5_000 });
    closers.push(() => app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0 });
    closers.push(() => metrics.close());
    const direct = redisClient(own.url);
    closers.push(() => direct.quit());
    for (let i = 0; i < 7; i++) await direct.xadd(stream, '*', 'n', String(i));

    await waitFor(async () => {
      await metrics.sampleNow();
      return (await valueOf(registry, 'redis_streams_stream_length_entries', { stream })) === 7;
    }, 'the stream length gauge');
    const labels = { stream, group: 'nest' };
    expect(await valueOf(registry, 'redis_streams_group_consumers', labels)).toBe(1);
    expect(await valueOf(registry, 'redis_streams_min_idle_time_seconds', labels)).toBe(5);
    const node = `127.0.0.1:${own.port}`;
    expect(await valueOf(registry, 'redis_streams_redis_memory_max_bytes', { node })).toBe(64 * 1024 * 1024);
    const used = await valueOf(registry, 'redis_streams_redis_memory_used_bytes', { node });
    const reported = parseMemory(node, await direct.info('memory')).usedBytes;
    // Both readings are of a live server; the sample came first, so it is in the same range.
    expect(used).toBeGreaterThan(100_000);
    expect(used).toBeLessThan(reported * 2);
    // The node label is host:port only: credentials a URL may carry never become a label.
    expect(await registry.metrics()).not.toMatch(/redis:\/\//);
  });

  it('ages a read loop that cannot read (Redis paused) and resets it once reads complete again', async () => {
    const own = await startRedis();
    closers.push(() => own.stop());
    const stream = unique('metrics-loop');
    const { app, server } = await startMicroservice([handlers(stream)], { connection: own.url, blockMs: 100 });
    closers.push(() => app.close());
    const registry = new Registry();
    // A short sample timeout: while Redis is paused the stream gauges time out, the loop age does not wait.
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0, sampleTimeoutMs: 200 });
    closers.push(() => metrics.close());
    const labels = { stream, group: 'nest' };
    const age = async () => {
      await metrics.sampleNow();
      return valueOf(registry, 'redis_streams_read_loop_last_read_age_seconds', labels);
    };
    await waitFor(async () => (await age()) < 0.5, 'a reading loop');

    const admin = redisClient(own.url);
    closers.push(() => admin.quit());
    await admin.call('CLIENT', 'PAUSE', '3000', 'ALL');
    await waitFor(async () => (await age()) >= 1, 'the loop age to pass 1 s while Redis is paused');
    await waitFor(async () => (await age()) < 0.5, 'the loop age to drop once Redis answers again', 10_000);
  });

  it("records each XADD's duration per stream and the retention a client writes each stream with", async () => {
    const [plain, safe, aged] = [unique('metrics-xadd'), unique('metrics-safe'), unique('metrics-age')];
    const client = new RedisStreamsClient({
      retentionByPattern: {
        [plain]: { maxLen: 1_000 },
        [safe]: { maxLen: 5_000, safe: true, intervalMs: 60_000 },
        [aged]: { minIdAgeMs: 3_600_000 },
      },
    });
    closers.push(() => client.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attachClient(client, { registry });
    closers.push(() => metrics.close());

    await Promise.all(Array.from({ length: 20 }, (_, i) => lastValueFrom(client.emit(plain, { i }))));
    await lastValueFrom(client.emit(safe, {}));
    await lastValueFrom(client.emit(aged, {}));

    const histogram = 'redis_streams_xadd_duration_seconds';
    expect(await valueOf(registry, histogram, { stream: plain }, `${histogram}_count`)).toBe(20);
    expect(await valueOf(registry, histogram, { stream: plain, le: '+Inf' }, `${histogram}_bucket`)).toBe(20);
    expect(await valueOf(registry, histogram, { stream: safe }, `${histogram}_count`)).toBe(1);
    expect(await valueOf(registry, histogram, { stream: plain }, `${histogram}_sum`)).toBeGreaterThan(0);
    const retention = 'redis_streams_stream_retention_max_entries';
    expect(await valueOf(registry, retention, { stream: plain, trim: 'on-write' })).toBe(1_000);
    expect(await valueOf(registry, retention, { stream: safe, trim: 'safe' })).toBe(5_000);
    expect(await valueOf(registry, 'redis_streams_stream_retention_max_age_seconds', { stream: aged })).toBe(3_600);

    metrics.detachClient(client);
    await lastValueFrom(client.emit(plain, {}));
    expect(await valueOf(registry, histogram, { stream: plain }, `${histogram}_count`)).toBe(20);
  });

  it('reads used_memory and maxmemory out of INFO memory', () => {
    const info = '# Memory\r\nused_memory:1048576\r\nused_memory_human:1.00M\r\nmaxmemory:0\r\nmaxmemory_human:0B\r\n';
    expect(parseMemory('10.0.0.1:6379', info)).toEqual({ node: '10.0.0.1:6379', usedBytes: 1_048_576, maxBytes: 0 });
  });
});
