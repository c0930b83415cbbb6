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
// A local Redis Cluster of cluster-enabled redis-servers, joined by redis-cli --cluster create.
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs') as {
  startCluster(options: { masters: number; replicas: number; appendfsync?: string }): Promise<{
    startupNodes: Array<{ host: string; port: number }>;
    nodes: Array<{ port: number }>;
    masters(): Array<{ port: number }>;
    killMaster(node: { port: number }): Promise<void>;
    stop(): Promise<void>;
  }>;
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
  // Closing after the cluster failover waits for the cluster to settle (acks in flight to the
  // killed master are retried until the replica takes over): more than Jest's 5 s default.
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  }, 60_000);
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

  it('samples used_memory and maxmemory of each master of a Redis Cluster, labelled by node, no replica, and the new master after a failover', async () => {
    const cluster = await startCluster({ masters: 3, replicas: 1, appendfsync: 'everysec' });
    closers.push(() => cluster.stop());
    // A distinct limit per node, so each gauge can only have come from its own node's INFO.
    const limitOf = new Map(cluster.nodes.map((n, i) => [n.port, (16 + 8 * i) * 1024 * 1024]));
    for (const node of cluster.nodes) {
      const direct = redisClient(`redis://127.0.0.1:${node.port}`);
      // disconnect, not quit: one of these nodes is killed below, and QUIT would wait for it.
      closers.push(() => direct.disconnect());
      await direct.config('SET', 'maxmemory', String(limitOf.get(node.port)));
      // Replicas reach every node's CLUSTER SLOTS by gossip, a moment after they link up; the
      // client below connects to them too, so a reading of every connected node would add labels.
      await waitFor(async () => {
        const slots = (await direct.cluster('SLOTS')) as unknown as unknown[][];
        return slots.length === 3 && slots.every((range) => range.length === 4);
      }, `every range's replica in CLUSTER SLOTS of node ${node.port}`);
    }
    const masters = cluster.masters().map((m) => m.port);
    expect(masters).toHaveLength(3);
    const stream = unique('metrics-cluster');
    const { app, server } = await startMicroservice([handlers(stream)], {
      connection: { cluster: cluster.startupNodes, clusterOptions: { redisOptions: { maxRetriesPerRequest: null } } },
    });
    closers.push(() => app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0 });
    closers.push(() => metrics.close());
    await metrics.sampleNow();

    const nodesOf = async (name: string) =>
      new Map((await registry.getSingleMetric(name)!.get()).values.map((v) => [String(v.labels.node), v.value]));
    const max = await nodesOf('redis_streams_redis_memory_max_bytes');
    const used = await nodesOf('redis_streams_redis_memory_used_bytes');
    const labels = masters.map((port) => `127.0.0.1:${port}`).sort();
    expect([...max.keys()].sort()).toEqual(labels);
    expect([...used.keys()].sort()).toEqual(labels);
    for (const port of masters) {
      const node = `127.0.0.1:${port}`;
      expect([node, max.get(node)]).toEqual([node, limitOf.get(port)]);
      expect([node, used.get(node)]).toEqual([node, expect.any(Number)]);
      expect(used.get(node)).toBeGreaterThan(100_000);
    }

    // A failover: the promoted replica is a master now, and is read although the client only
    // learns of it by asking the cluster again.
    await cluster.killMaster(cluster.masters()[0]);
    const promoted = cluster.masters().find((m) => !masters.includes(m.port))!;
    const node = `127.0.0.1:${promoted.port}`;
    await waitFor(async () => {
      await metrics.sampleNow();
      return (await nodesOf('redis_streams_redis_memory_max_bytes')).get(node) === limitOf.get(promoted.port);
    }, `the memory of ${node}, the master promoted by the failover`);
    expect((await nodesOf('redis_streams_redis_memory_used_bytes')).get(node)).toBeGreaterThan(100_000);
  }, 90_000);

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
