import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { HealthIndicatorService } from '@nestjs/terminus';
import {
  RedisStreamsContext,
  RedisStreamsHealthIndicator,
  RedisStreamsMetrics,
  type RedisStreamsServer,
  partitionStream,
} from 'nest-redis-streams';
import { Registry } from 'prom-client';
import {
  claimEpochKey,
  partitionOwnerKey,
  retryWaitChecksKey,
  retryWaitsKey,
} from '../../libs/nest-redis-streams/src/keys/index.js';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { pendingCount, redisClient, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

/** Handlers of one logical stream with exclusive ownership; every run is recorded with its instance. */
function exclusiveHandlers(stream: string, partitions: number, runs: Array<{ consumer: string; n: number; stream: string }>) {
  @Controller()
  class Handlers {
    @EventPattern(stream, { group: 'g', partitions, ownership: 'exclusive', ownershipLeaseMs: 600, minIdleTimeMs: 1_000 })
    handle(@Payload() data: { n: string }, @Ctx() ctx: RedisStreamsContext) {
      runs.push({ consumer: ctx.getConsumer(), n: Number(data.n), stream: ctx.getStream() });
    }
  }
  return Handlers;
}

const owned = (server: RedisStreamsServer) => server.getOwnership()[0]?.owned ?? [];

describe('exclusive partition ownership (in one process)', () => {
  const { redis, closers } = testContext();

  async function instance(stream: string, name: string, runs: Array<{ consumer: string; n: number; stream: string }>) {
    const started = await startMicroservice([exclusiveHandlers(stream, 6, runs)], { consumer: name });
    closers.push(() => started.app.close());
    return started;
  }

  it('a lone instance owns every partition once listening; a second and third take their share, and each entry runs once', async () => {
    const stream = unique('own');
    const runs: Array<{ consumer: string; n: number; stream: string }> = [];
    const a = await instance(stream, 'a', runs);
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics();
    metrics.attach(a.server, { registry, sampleIntervalMs: 0 });
    closers.push(async () => metrics.detach(a.server));
    expect(owned(a.server)).toEqual([0, 1, 2, 3, 4, 5]);
    const assigned: number[] = [];
    a.server.events.on('partition-revoked', (e) => assigned.push(e.partition));
    const b = await instance(stream, 'b', runs);
    const c = await instance(stream, 'c', runs);
    await waitFor(() => [a, b, c].every(({ server }) => owned(server).length === 2), 'partitions shared 2/2/2');
    const all = [a, b, c].flatMap(({ server }) => owned(server));
    expect(all.sort()).toEqual([0, 1, 2, 3, 4, 5]);
    // a gave up exactly the four partitions that moved, no more.
    expect(assigned).toHaveLength(4);
    for (let n = 0; n < 60; n++) await redis.xadd(partitionStream(stream, n % 6), '*', 'n', String(n));
    await waitFor(() => runs.length >= 60, 'all 60 entries handled');
    expect(new Set(runs.map((r) => r.n)).size).toBe(60);
    expect(runs).toHaveLength(60);
    // Each partition's entries ran on its one owner, in stream order.
    for (let p = 0; p < 6; p++) {
      const mine = runs.filter((r) => r.stream === partitionStream(stream, p));
      expect(new Set(mine.map((r) => r.consumer)).size).toBe(1);
      expect(mine.map((r) => r.n)).toEqual([...mine.map((r) => r.n)].sort((x, y) => x - y));
    }
    const details = a.server.getOwnership()[0];
    expect(details.members).toHaveLength(3);
    expect(details.partitions.filter((p) => p.mine).map((p) => p.partition)).toEqual(owned(a.server));
    // Readiness shows who owns which partition under which generation.
    // Read from Redis: a lease renewed late on a busy machine shows a partition ownerless for a moment.
    const readiness = async () => {
      const ready = await new RedisStreamsHealthIndicator(new HealthIndicatorService()).isReady('streams', a.server);
      return (ready.streams as unknown as { ownership: Array<typeof details> }).ownership[0];
    };
    let report = await readiness();
    await waitFor(
      async () => (report = await readiness()).partitions.every((p) => p.owner !== null && p.generation >= 1),
      'every partition owned in the readiness report',
    );
    expect(report.owned).toEqual(owned(a.server));
    expect(report.rebalances).toBeGreaterThanOrEqual(2);
    // The metrics follow: a now owns 2 partitions (at least one rebalance since the metrics were attached).
    const gauge = (await registry.getSingleMetric('redis_streams_partitions_owned')!.get()).values;
    expect(gauge.map((v) => v.value)).toEqual([2]);
    const counted = (await registry.getSingleMetric('redis_streams_partition_rebalances_total')!.get()).values;
    expect(counted[0].value).toBeGreaterThanOrEqual(1);
  });

  it('a closed instance releases its partitions: the other takes them over at once and runs what was left pending', async () => {
    const stream = unique('own-close');
    const runs: Array<{ consumer: string; n: number; stream: string }> = [];
    const a = await instance(stream, 'a', runs);
    const b = await instance(stream, 'b', runs);
    await waitFor(() => owned(a.server).length === 3 && owned(b.server).length === 3, 'partitions shared 3/3');
    await a.app.close();
    await waitFor(() => owned(b.server).length === 6, 'b owns all six');
    for (let n = 0; n < 12; n++) await redis.xadd(partitionStream(stream, n % 6), '*', 'n', String(n));
    await waitFor(() => runs.length >= 12, 'all 12 entries handled');
    expect(runs.every((r) => r.consumer === 'b')).toBe(true);
    for (let p = 0; p < 6; p++) expect(await pendingCount(redis, partitionStream(stream, p), 'g')).toBe(0);
  });

  it('shared consumption (the default) writes no ownership key', async () => {
    const stream = unique('own-off');
    const runs: Array<{ consumer: string; n: number; stream: string }> = [];
    @Controller()
    class Shared {
      @EventPattern(stream, { group: 'g', partitions: 2 })
      handle(@Payload() data: { n: string }, @Ctx() ctx: RedisStreamsContext) {
        runs.push({ consumer: ctx.getConsumer(), n: Number(data.n), stream: ctx.getStream() });
      }
    }
    const { app, server } = await startMicroservice([Shared], { consumer: 'solo' });
    closers.push(() => app.close());
    await redis.xadd(partitionStream(stream, 1), '*', 'n', '1');
    await waitFor(() => runs.length === 1, 'the entry handled');
    expect(server.getOwnership()).toEqual([]);
    // Every group has a claim epoch (the cheap acks') and its consumers' beats (their liveness);
    // nothing of ownership is written.
    const keys = await redis.keys(`*${stream}*nrs-*`);
    expect(keys.filter((key) => !key.includes(':nrs-claims:') && !key.includes(':nrs-beats:'))).toEqual([]);
  });

  it('fences every write: a stale generation cannot ack, renew, retry or dead-letter', async () => {
    const stream = unique('fence');
    const scripted = withStreamScripts(redisClient());
    closers.push(() => scripted.quit());
    const owner = partitionOwnerKey(stream, 'g');
    await scripted.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const id = await scripted.xadd(stream, '*', 'data', '{}');
    await scripted.xreadgroup('GROUP', 'g', 'c', 'STREAMS', stream, '>');
    const [ok1, gen1] = await scripted.nrsOwnClaim(owner, 'old', 60_000, '');
    expect([ok1, gen1]).toEqual([1, 1]);
    // The lease runs out (set into the past), and another instance claims: generation 2.
    await scripted.hset(owner, 'until', 0);
    const [ok2, gen2] = await scripted.nrsOwnClaim(owner, 'new', 60_000, '');
    expect([ok2, gen2]).toEqual([1, 2]);
    const stale = [owner, 'old', '1', 'g', 'c'] as const;
    // A refused generation has its own answer (not "the entry is another consumer's"), even for an
    // ack that would take the plain XACK path (read under the claim epoch Redis holds).
    const epochKey = claimEpochKey(stream, 'g');
    await scripted.hset(epochKey, 'n', '1000000000000001');
    expect(await scripted.nrsAckUnderEpochFenced(stream, epochKey, ...stale, id!, id!, '1000000000000001', id!)).toBeNull();
    expect(await scripted.nrsClaimIfOwnedFenced(stream, ...stale, 0, -1, id!)).toBeNull();
    // The retry (idle 29 s, count kept, back-off 1 s, then the record's settings) writes no record either.
    const waits = [retryWaitsKey(stream, 'g'), retryWaitChecksKey(stream, 'g')] as const;
    const retry = [29_000, -1, 1_000, 60_000, 16, 25, id!] as const;
    expect(await scripted.nrsRetryIfOwnedFenced(stream, ...waits, ...stale, ...retry)).toBeNull();
    expect(await redis.exists(...waits)).toBe(0);
    expect(await scripted.nrsDeadLetterIfOwnedFenced(stream, `${stream}:dlq`, ...stale, id!, '1', '0')).toBe(0);
    expect(await scripted.nrsFencedRead(stream, ...stale, 10)).toBeNull();
    expect(await scripted.nrsOwnClaim(owner, 'old', 60_000, '1')).toEqual([0, 2, 'new']);
    expect(await scripted.nrsOwnRelease(owner, 'old', '1')).toBe(0);
    expect(await pendingCount(redis, stream, 'g')).toBe(1);
    // The current generation may write.
    expect(await scripted.nrsRetryIfOwnedFenced(stream, ...waits, owner, 'new', '2', 'g', 'c', ...retry)).toEqual([[], []]);
    expect(await redis.hkeys(waits[0])).toEqual([id]);
    const current = [epochKey, owner, 'new', '2', 'g', 'c', id!, id!, '1000000000000001', id!] as const;
    expect(await scripted.nrsAckUnderEpochFenced(stream, ...current)).toEqual(['1000000000000001', 1]);
    expect(await pendingCount(redis, stream, 'g')).toBe(0);
  });
});
