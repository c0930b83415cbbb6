import type { Registry } from 'prom-client';
import type { PromRegistry } from '../../metrics/prom-registry.interface.js';
import { loadPromClient } from '../../metrics/prom-client.loader.js';
import type { OutboxRelay } from './outbox-relay.js';
import type { OutboxBacklog } from './outbox-round.js';

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
 * The outbox relay's metrics, without the prefix (default `redis_streams_`), as alert rules and
 * dashboards may select them.
 */
export const OUTBOX_METRIC_DEFINITIONS = {
  backlog: { type: 'gauge', name: 'outbox_backlog', help: 'Outbox events not yet published (parked ones not counted).' },
  oldestAge: {
    type: 'gauge',
    name: 'outbox_oldest_age_seconds',
    help: 'Age of the oldest outbox event not yet published, parked ones aside (0 when none waits).',
  },
  parked: {
    type: 'gauge',
    name: 'outbox_parked_events',
    help: 'Outbox events parked because their publish can never succeed as they are, by stream (they and later events of their key wait for an operator).',
  },
  lag: { type: 'histogram', name: 'outbox_relay_lag_seconds', help: 'Time from adding an outbox event to publishing it.' },
  published: { type: 'counter', name: 'outbox_published_total', help: 'Outbox events published.' },
  failures: {
    type: 'counter',
    name: 'outbox_publish_failures_total',
    help: 'Outbox publishes that failed and are retried (permanent failures park their event instead).',
  },
} as const;

/**
 * Prometheus metrics of an outbox relay (prom-client, an optional peer, loaded on first use):
 * `outbox_backlog`, `outbox_oldest_age_seconds` and `outbox_parked_events{stream}` (read from the
 * table at scrape time),
 * `outbox_relay_lag_seconds` (added → published), `outbox_published_total` and
 * `outbox_publish_failures_total`. Returns a function that stops feeding them.
 */
export function attachOutboxMetrics(relay: OutboxRelay, options: OutboxMetricsOptions = {}): () => void {
  const prom = loadPromClient();
  const registry = (options.registry as Registry | undefined) ?? prom.register;
  const prefix = options.prefix ?? 'redis_streams_';
  const reuse = <M>(name: string, create: () => M): M => (registry.getSingleMetric(prefix + name) as M | undefined) ?? create();
  let backlog: Promise<OutboxBacklog> | null = null;
  const d = OUTBOX_METRIC_DEFINITIONS;
  // One table read per scrape serves both gauges.
  const read = () => (backlog ??= relay.backlog().finally(() => setTimeout(() => (backlog = null), 0)));
  reuse(
    d.backlog.name,
    () =>
      new prom.Gauge({
        name: `${prefix}${d.backlog.name}`,
        help: d.backlog.help,
        registers: [registry],
        async collect() {
          this.set((await read()).backlog);
        },
      }),
  );
  reuse(
    d.oldestAge.name,
    () =>
      new prom.Gauge({
        name: `${prefix}${d.oldestAge.name}`,
        help: d.oldestAge.help,
        registers: [registry],
        async collect() {
          this.set((await read()).oldestAgeMs / 1000);
        },
      }),
  );
  reuse(
    d.parked.name,
    () =>
      new prom.Gauge({
        name: `${prefix}${d.parked.name}`,
        help: d.parked.help,
        labelNames: ['stream'],
        registers: [registry],
        async collect() {
          // A stream whose parked events were all dealt with drops to no series, not a stale count.
          this.reset();
          for (const { stream, parked } of (await read()).parkedByStream) this.set({ stream }, parked);
        },
      }),
  );
  const lag = reuse(
    d.lag.name,
    () =>
      new prom.Histogram({
        name: `${prefix}${d.lag.name}`,
        help: d.lag.help,
        buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
        registers: [registry],
      }),
  );
  const published = reuse(
    d.published.name,
    () => new prom.Counter({ name: `${prefix}${d.published.name}`, help: d.published.help, registers: [registry] }),
  );
  const failures = reuse(
    d.failures.name,
    () =>
      new prom.Counter({
        name: `${prefix}${d.failures.name}`,
        help: d.failures.help,
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
