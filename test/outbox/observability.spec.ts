import { HealthIndicatorService } from '@nestjs/terminus';
import { Registry } from 'prom-client';
import { throwError } from 'rxjs';
import { RedisStreamsClient } from 'nest-redis-streams';
import { attachOutboxMetrics, Outbox, OutboxHealthIndicator, OutboxRelay } from 'nest-redis-streams/database';
import { redisUrl, testContext, unique, waitFor } from '../support/helpers.js';
import { pgKind, type TestDatabase, usePostgresServer } from '../inbox/support/databases.js';

usePostgresServer();
// Each test creates a database and starts apps; on 2 shared cores that can pass Jest's 5 s default.
jest.setTimeout(30_000);

describe('Outbox relay metrics and health, on PostgreSQL 15', () => {
  const { closers } = testContext();
  let t: TestDatabase;
  let client: RedisStreamsClient;
  beforeEach(async () => {
    t = await pgKind.open();
    client = new RedisStreamsClient({ connection: redisUrl() });
    closers.push(
      () => t.close(),
      () => client.close(),
    );
  });
  type Sample = { value: number; metricName?: string };
  const samples = async (registry: Registry, name: string) => (await registry.getSingleMetric(name)!.get()).values as Sample[];
  const metric = async (registry: Registry, name: string) => (await samples(registry, name))[0]?.value;

  it('counts publishes and failures, times the relay lag, and reads backlog and oldest age at scrape time', async () => {
    const stream = unique('outbox-metrics');
    const registry = new Registry();
    let failing = true;
    const relay = new OutboxRelay(
      t.db,
      { emit: (pattern, record) => (failing ? throwError(() => new Error('down')) : client.emit(pattern, record)) },
      { pollIntervalMs: 20, retryDelayMs: 50, maxRetryDelayMs: 50 },
    );
    closers.push(() => relay.close());
    attachOutboxMetrics(relay, { registry });
    const outbox = new Outbox(t.db);
    await t.db.transaction(async (tx) => {
      for (let i = 0; i < 3; i++) await outbox.add(tx, stream, { i });
    });
    await t.query(`UPDATE nrs_outbox SET created_at = now() - interval '30 seconds'`);
    expect(await metric(registry, 'redis_streams_outbox_backlog')).toBe(3);
    expect(await metric(registry, 'redis_streams_outbox_oldest_age_seconds')).toBeGreaterThanOrEqual(30);
    relay.start();
    await waitFor(
      async () => ((await metric(registry, 'redis_streams_outbox_publish_failures_total')) ?? 0) >= 3,
      'failures counted',
    );
    failing = false;
    await waitFor(async () => (await metric(registry, 'redis_streams_outbox_published_total')) === 3, 'publishes counted');
    expect(await metric(registry, 'redis_streams_outbox_backlog')).toBe(0);
    expect(await metric(registry, 'redis_streams_outbox_oldest_age_seconds')).toBe(0);
    const lag = await samples(registry, 'redis_streams_outbox_relay_lag_seconds');
    expect(lag.find((v) => v.metricName === 'redis_streams_outbox_relay_lag_seconds_count')?.value).toBe(3);
    expect(lag.find((v) => v.metricName === 'redis_streams_outbox_relay_lag_seconds_sum')?.value).toBeGreaterThanOrEqual(90);
  });

  it('is up while the relay keeps up and down, with the reason, when it is stopped or an event waits too long', async () => {
    const indicator = new OutboxHealthIndicator(new HealthIndicatorService());
    const relay = new OutboxRelay(
      t.db,
      { emit: () => throwError(() => new Error('Redis unreachable')) },
      { pollIntervalMs: 20, retryDelayMs: 10_000 },
    );
    closers.push(() => relay.close());
    expect((await indicator.isHealthy('outbox', relay)).outbox).toMatchObject({
      status: 'down',
      reason: expect.stringContaining('not running'),
    });
    relay.start();
    await waitFor(() => relay.status().lastRoundAt > 0, 'a first round');
    expect((await indicator.isHealthy('outbox', relay)).outbox).toMatchObject({ status: 'up', backlog: 0 });
    await t.db.transaction((tx) => new Outbox(t.db).add(tx, unique('outbox-health'), {}));
    await t.query(`UPDATE nrs_outbox SET created_at = now() - interval '2 minutes'`);
    const down = (await indicator.isHealthy('outbox', relay, { maxOldestAgeMs: 60_000, maxBacklog: 0 })).outbox;
    expect(down.status).toBe('down');
    expect(down.reason).toMatch(/oldest unpublished outbox event is \d+ ms old, above maxOldestAgeMs 60000/);
    expect(down.reason).toMatch(/backlog is 1, above maxBacklog 0/);
  });
});
