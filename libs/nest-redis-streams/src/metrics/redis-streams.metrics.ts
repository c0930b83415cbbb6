import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { TransportEventMap } from '../events/transport-events.js';
import { collectServerStats } from '../health/server-stats.js';
import type { StreamStats } from '../health/stream-stats.js';
import { isConnectionClosedError } from '../redis/errors.js';
import type { RedisStreamsServer } from '../server/redis-streams.server.js';
import type { StreamConsumer } from '../server/stream-consumer.js';
import { eventRecorders } from './event-recorders.js';
import { getOrCreateInstruments, type MetricInstruments } from './metric-instruments.js';
import type { MetricsAttachOptions } from './metrics-options.interface.js';
import { METRICS_DEFAULTS, METRICS_MESSAGES } from './metrics.constants.js';
import { loadPromClient } from './prom-client.loader.js';

/** What one attached server holds: its event subscriptions and its sampling timer. */
interface Attachment {
  instruments: MetricInstruments;
  unsubscribe: Array<() => void>;
  timer: NodeJS.Timeout | null;
  idleSampleSize: number;
  sampleTimeoutMs: number;
  sampling: Promise<void> | null;
  lastError: string | null;
}

/**
 * Prometheus metrics for `RedisStreamsServer`s, through the optional peer prom-client (loaded on
 * the first `attach()`). Names below use the default prefix `redis_streams_`; all carry the
 * labels `stream` and `group`.
 *
 * Counters (this instance's work): `entries_delivered_total`, `entries_acked_total`,
 * `entries_failed_total`, `entries_reclaimed_total`, `entries_dead_lettered_total` (+ `reason`),
 * `entries_lost_by_trim_total`, `lease_renewals_total`, `leases_lost_total`.
 * Histograms: `handler_duration_seconds` (+ `outcome` ok/error), `end_to_end_latency_seconds`
 * (entry id time → handler success).
 * Gauges sampled from Redis every `sampleIntervalMs` (the group as a whole, so aggregate across
 * instances with `max`): `pending_entries`, `oldest_pending_idle_seconds`,
 * `consumer_lag_entries` (absent while Redis cannot tell), `dead_letter_entries`.
 *
 * ```ts
 * const metrics = new RedisStreamsMetrics().attach(server, { registry });
 * ```
 */
@Injectable()
export class RedisStreamsMetrics implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisStreamsMetrics.name);
  private readonly attachments = new Map<RedisStreamsServer, Attachment>();

  /**
   * Records the server's transport events and starts sampling its gauges. Attaching a server
   * again replaces its earlier attachment. Throws when prom-client is not installed.
   */
  attach(server: RedisStreamsServer, options: MetricsAttachOptions = {}): this {
    const client = loadPromClient();
    this.detach(server);
    const instruments = getOrCreateInstruments(client, {
      registry: options.registry ?? client.register,
      prefix: options.prefix ?? METRICS_DEFAULTS.prefix,
      handlerDurationBuckets: options.handlerDurationBuckets ?? METRICS_DEFAULTS.handlerDurationBuckets,
      endToEndLatencyBuckets: options.endToEndLatencyBuckets ?? METRICS_DEFAULTS.endToEndLatencyBuckets,
    });
    const recorders = eventRecorders(instruments);
    const unsubscribe = (Object.keys(recorders) as Array<keyof TransportEventMap>).map((event) => {
      const listener = this.guard(event, recorders[event] as (...args: unknown[]) => void);
      server.events.on(event, listener as never);
      return () => void server.events.off(event, listener as never);
    });
    const attachment: Attachment = {
      instruments,
      unsubscribe,
      timer: null,
      idleSampleSize: options.idleSampleSize ?? METRICS_DEFAULTS.idleSampleSize,
      sampleTimeoutMs: options.sampleTimeoutMs ?? METRICS_DEFAULTS.sampleTimeoutMs,
      sampling: null,
      lastError: null,
    };
    const intervalMs = options.sampleIntervalMs ?? METRICS_DEFAULTS.sampleIntervalMs;
    if (intervalMs > 0) {
      attachment.timer = setInterval(() => void this.sample(server, attachment), intervalMs);
      // Metrics must never keep a process alive that is otherwise done.
      attachment.timer.unref();
    }
    this.attachments.set(server, attachment);
    return this;
  }

  /** Stops recording and sampling one server, or every attached server. The metrics stay registered. */
  detach(server?: RedisStreamsServer): void {
    const servers = server ? [server] : [...this.attachments.keys()];
    for (const s of servers) {
      const attachment = this.attachments.get(s);
      if (!attachment) continue;
      if (attachment.timer) clearInterval(attachment.timer);
      for (const off of attachment.unsubscribe) off();
      this.attachments.delete(s);
    }
  }

  /** Detaches every server. */
  close(): void {
    this.detach();
  }

  /** Nest calls this at shutdown when the metrics are a provider. */
  onApplicationShutdown(): void {
    this.close();
  }

  /** Samples the gauges of one or every attached server now (e.g. right before a scrape). Never throws. */
  async sampleNow(server?: RedisStreamsServer): Promise<void> {
    const targets = server ? [server] : [...this.attachments.keys()];
    await Promise.all(
      targets.map((s) => {
        const attachment = this.attachments.get(s);
        return attachment ? this.sample(s, attachment) : Promise.resolve();
      }),
    );
  }

  /** One sample at a time per server: a slow Redis must not pile up overlapping rounds. */
  private sample(server: RedisStreamsServer, attachment: Attachment): Promise<void> {
    attachment.sampling ??= this.runSample(server, attachment).finally(() => (attachment.sampling = null));
    return attachment.sampling;
  }

  private async runSample(server: RedisStreamsServer, attachment: Attachment): Promise<void> {
    // Not listening yet (attach() may come before listen()), or no handlers: nothing to read.
    if (server.getConsumers().length === 0) return;
    try {
      const measured = await collectServerStats(server, attachment.idleSampleSize, attachment.sampleTimeoutMs);
      for (const { consumer, stats } of measured) this.setGauges(attachment.instruments, consumer, stats);
      attachment.lastError = null;
    } catch (err) {
      if (hasEnded(server)) {
        // The server was closed: nothing will ever be sampled again.
        this.detach(server);
        return;
      }
      const message = (err as Error).message;
      // A server closing right now answers "Connection is closed" before its status turns "end".
      if (isConnectionClosedError(err)) this.logger.debug(METRICS_MESSAGES.sampleFailed(message));
      // Once per distinct failure: an outage would otherwise log on every interval.
      else if (message !== attachment.lastError) this.logger.warn(METRICS_MESSAGES.sampleFailed(message));
      attachment.lastError = message;
    }
  }

  private setGauges(m: MetricInstruments, consumer: StreamConsumer, stats: StreamStats | Error): void {
    const labels = { stream: consumer.stream, group: consumer.group };
    if (stats instanceof Error) {
      // The group is gone until the read loop re-creates it: no figure is better than a stale one.
      this.logger.debug(stats.message);
      for (const gauge of [m.pending, m.oldestIdle, m.lag, m.deadLetters]) gauge.remove(labels);
      return;
    }
    m.pending.set(labels, stats.pending);
    m.oldestIdle.set(labels, stats.oldestIdleMs / 1_000);
    // The group's own entries in the shared dead-letter stream (its length when too long to count).
    m.deadLetters.set(labels, stats.groupDeadLetters ?? stats.deadLetters);
    if (stats.lag === null) m.lag.remove(labels);
    else m.lag.set(labels, stats.lag);
  }

  /** Listeners run inside emit(), on the consumer's delivery path: a throw must not fail the entry. */
  private guard(event: string, record: (...args: unknown[]) => void): (...args: unknown[]) => void {
    return (...args) => {
      try {
        record(...args);
      } catch (err) {
        this.logger.warn(METRICS_MESSAGES.listenerFailed(event, (err as Error).message));
      }
    };
  }
}

function hasEnded(server: RedisStreamsServer): boolean {
  try {
    return server.unwrap<Redis>().status === 'end';
  } catch {
    return false;
  }
}
