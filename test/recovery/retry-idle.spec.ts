import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { HealthIndicatorService } from '@nestjs/terminus';
import { RedisStreamsHealthIndicator, RedisStreamsMetrics, type RedisStreamsContext } from 'nest-redis-streams';
import { Registry } from 'prom-client';
import { retryWaitChecksKey, retryWaitsKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { idTime } from '../../libs/nest-redis-streams/src/operations/stream-position.js';
import { runCli } from '../cli/run-cli.js';
import { q, startConsoleApp } from '../console/console-app.js';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';
import { WorkerProcess } from '../support/worker-process.js';

// A retry's back-off backdates the entry's PEL idle time (any reclaimer then retries it on time,
// even when the failing consumer died). What operators read must not show that invented time:
// health's and the metrics' oldest idle, the console's pending row and the CLI's `pending` say
// how long since the entry was really delivered (or failed), never more than its age.

const MIN_IDLE_MS = 30_000;
const BACKOFF_MS = 8_000;
/** Timers and rounds on a busy machine: a retry counts as on time well before min-idle. */
const LATE_MS = 20_000;

type PendingRow = { id: string; idleMs: number; lastDeliveryAt: number; retryAt: number | null };

const { redis, closers } = testContext();

/** The raw PEL idle time of `id`, as Redis reports it (backdated while the retry waits). */
async function pelIdle(stream: string, id: string): Promise<number> {
  const [row] = (await redis.xpending(stream, 'nest', id, id, 1)) as Array<[string, string, number, number]>;
  return row ? Number(row[2]) : -1;
}

/** A handler that fails the first run of each entry and records every run. */
function failingOnce(stream: string, runs: Array<{ id: string; at: number; deliveries: number }>) {
  @Controller()
  class FlakyOnce {
    @EventPattern(stream)
    handle(@Ctx() ctx: RedisStreamsContext) {
      const id = ctx.getEntryId();
      const first = !runs.some((r) => r.id === id);
      runs.push({ id, at: Date.now(), deliveries: ctx.getDeliveryCount() });
      if (first) throw new Error('flaky downstream');
    }
  }
  return FlakyOnce;
}

describe('idle times while a retry waits out its back-off (real Redis)', () => {
  it('health, the metrics gauge, the console and the CLI report no idle time longer than the entry is old; the retry runs on time', async () => {
    const stream = unique('retry-idle');
    const runs: Array<{ id: string; at: number; deliveries: number }> = [];
    const { app, server } = await startMicroservice([failingOnce(stream, runs)], {
      minIdleTimeMs: MIN_IDLE_MS,
      retryBackoffMs: BACKOFF_MS,
      reclaimIntervalMs: 100,
    });
    closers.push(() => app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0 });
    closers.push(async () => metrics.close());
    const consoleApp = await startConsoleApp({ streams: [stream], auditStream: unique('audit') });
    closers.push(() => consoleApp.app.close());

    const id = (await redis.xadd(stream, '*', 'data', '{"n":1}'))!;
    // The failure's retry write backdated the PEL: Redis itself says idle ≈ min-idle less the back-off.
    await waitFor(async () => (await pelIdle(stream, id)) >= MIN_IDLE_MS - BACKOFF_MS - 1_000, 'the retry write');
    const failedAt = runs[0].at;
    const age = () => Date.now() - idTime(id);

    const health = await new RedisStreamsHealthIndicator(new HealthIndicatorService()).isReady('redis-streams', server);
    const [stats] = (health['redis-streams'] as unknown as { streams: Array<{ oldestIdleMs: number }> }).streams;
    expect(stats.oldestIdleMs).toBeLessThanOrEqual(age());

    await metrics.sampleNow(server);
    const gauge = await registry.getSingleMetric('redis_streams_oldest_pending_idle_seconds')!.get();
    const idleSeconds = gauge.values.find((v) => v.labels.stream === stream)?.value;
    expect(idleSeconds).toBeDefined();
    expect(idleSeconds! * 1_000).toBeLessThanOrEqual(age());

    const page = await consoleApp.get(`pending?${q({ stream, group: 'nest' })}`);
    const [row] = page.body.items as PendingRow[];
    expect(row.id).toBe(id);
    expect(row.idleMs).toBeLessThanOrEqual(age());
    expect(row.lastDeliveryAt).toBeGreaterThanOrEqual(idTime(id));
    // Waiting for its retry: due a back-off after the failure (Redis' clock, the same machine's).
    expect(row.retryAt).toBeGreaterThanOrEqual(failedAt + BACKOFF_MS - 50);
    expect(row.retryAt).toBeLessThanOrEqual(failedAt + BACKOFF_MS + 1_000);

    const [cli, table] = await Promise.all([runCli(['pending', stream, 'nest', '--json']), runCli(['pending', stream, 'nest'])]);
    expect(cli.code).toBe(0);
    const [printed] = (JSON.parse(cli.stdout) as { items: PendingRow[] }).items;
    expect(printed.idleMs).toBeLessThanOrEqual(age());
    expect(table.stdout).toMatch(new RegExp(`${id}\\s.*\\(retry in [^)]+\\)`));

    // The retry runs once its back-off is over, not at min-idle.
    const retried = await waitFor(() => runs.find((r) => r.id === id && r.deliveries === 2), 'the retry', LATE_MS + 5_000);
    expect(retried.at - failedAt).toBeGreaterThanOrEqual(BACKOFF_MS - 50);
    expect(retried.at - failedAt).toBeLessThan(LATE_MS);
    await waitFor(async () => (await pelIdle(stream, id)) === -1, 'the ack of the retry');

    // Records do not outlive their entries: the next retry write removes the one of the acked
    // entry (checked once due), and keeps its own.
    const next = (await redis.xadd(stream, '*', 'data', '{"n":2}'))!;
    await waitFor(async () => (await pelIdle(stream, next)) >= MIN_IDLE_MS - BACKOFF_MS - 1_000, 'the second retry write');
    expect(await redis.hkeys(retryWaitsKey(stream, 'nest'))).toEqual([next]);
    expect(await redis.zrange(retryWaitChecksKey(stream, 'nest'), 0, -1)).toEqual([next]);
  }, 90_000);

  it('a consumer SIGKILLed during the back-off: another retries the entry once the back-off is over, not at min-idle', async () => {
    const stream = unique('retry-idle-kill');
    const worker = await WorkerProcess.start({
      REDIS_URL: process.env.REDIS_URL!,
      STREAM: stream,
      CONSUMER: 'doomed',
      BEHAVIOUR: 'fail',
      MIN_IDLE: String(MIN_IDLE_MS),
      RETRY_BACKOFF_MS: String(BACKOFF_MS),
    });
    closers.push(() => worker.kill());
    const id = (await redis.xadd(stream, '*', 'data', '{"n":1}'))!;
    await worker.waitFor((m) => m.type === 'start' && m.id === id, 'the first run');
    const startedBy = Date.now();
    await waitFor(async () => (await pelIdle(stream, id)) >= MIN_IDLE_MS - BACKOFF_MS - 1_000, 'the retry write');
    await worker.kill('SIGKILL');

    const runs: Array<{ id: string; at: number; deliveries: number }> = [{ id, at: 0, deliveries: 1 }];
    const { app } = await startMicroservice([failingOnce(stream, runs)], {
      consumer: 'survivor',
      minIdleTimeMs: MIN_IDLE_MS,
      retryBackoffMs: BACKOFF_MS,
      reclaimIntervalMs: 100,
    });
    closers.push(() => app.close());
    const retried = await waitFor(() => runs.find((r) => r.deliveries === 2), 'the retry by the survivor', LATE_MS + 5_000);
    expect(retried.id).toBe(id);
    expect(retried.at - startedBy).toBeGreaterThanOrEqual(BACKOFF_MS - 1_000);
    expect(retried.at - startedBy).toBeLessThan(LATE_MS);
    await waitFor(async () => (await pelIdle(stream, id)) === -1, 'the ack of the retry');
  }, 90_000);
});
