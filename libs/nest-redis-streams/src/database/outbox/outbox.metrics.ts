import type { Registry } from 'prom-client';
import type { PromRegistry } from '../../metrics/prom-registry.interface.js';
import { loadPromClient } from '../../metrics/prom-client.loader.js';
import type { OutboxRelay } from './outbox-relay.js';

/** Options of `attachOutboxMetrics`. */
export interface OutboxMetricsOptions {
  /**
   * Registry the metrics go in (reused when they exist there).
   * @default prom-client's global `register`
   */
  registry?: PromRegistry;
  /**
   * Prefix of every metric name (the transport's metrics use the same one).
   * @default 'redis_streams_'
   */
  prefix?: string;
}

/**
 * Prometheus metrics of an outbox relay (prom-client, an optional peer, loaded on first use):
 * `outbox_backlog` and `outbox_oldest_age_seconds` (read from the table at scrape time),
 * `outbox_relay_lag_seconds` (added → published), `outbox_published_total` and
 * `outbox_publish_failures_total`. Returns a function that stops feeding them.
 */
export function attachOutboxMetrics(relay: OutboxRelay, options: OutboxMetricsOptions = {}): () => void {
  const prom = loadPromClient();
  const registry = (options.registry as Registry | undefined) ?? prom.register;
  const prefix = options.prefix ?? 'redis_streams_';
  const reuse = <M>(name: string, create: () => M): M => (registry.getSingleMetric(prefix + name) as M | undefined) ?? create();
  let backlog: Promise<{ backlog: number; oldestAgeMs: number }> | null = null;
  // One table read per scrape serves both gauges.
  const read = () => (backlog ??= relay.backlog().finally(() => setTimeout(() => (backlog = null), 0)));
  reuse(
    'outbox_backlog',
    () =>
      new prom.Gauge({
        name: `${prefix}outbox_backlog`,
        help: 'Outbox events not yet published.',
        registers: [registry],
        async collect() {
          this.set((await read()).backlog);
        },
      }),
  );
  reuse(
    'outbox_oldest_age_seconds',
    () =>
      new prom.Gauge({
        name: `${prefix}outbox_oldest_age_seconds`,
        help: 'Age of the oldest outbox event not yet published (0 when none waits).',
        registers: [registry],
        async collect() {
          this.set((await read()).oldestAgeMs / 1000);
        },
      }),
  );
  const lag = reuse(
    'outbox_relay_lag_seconds',
    () =>
      new prom.Histogram({
        name: `${prefix}outbox_relay_lag_seconds`,
        help: 'Time from adding an outbox event to publishing it.',
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
        registers: [registry],
      }),
  );
  const published = reuse(
    'outbox_published_total',
    () => new prom.Counter({ name: `${prefix}outbox_published_total`, help: 'Outbox events published.', registers: [registry] }),
  );
  const failures = reuse(
    'outbox_publish_failures_total',
    () =>
      new prom.Counter({
        name: `${prefix}outbox_publish_failures_total`,
        help: 'Outbox publishes that failed (each is retried).',
        registers: [registry],
      }),
  );
  return relay.observe({
    published: (lagMs) => {
      published.inc();
      lag.observe(lagMs / 1000);
    },
    failed: () => failures.inc(),
  });
}
