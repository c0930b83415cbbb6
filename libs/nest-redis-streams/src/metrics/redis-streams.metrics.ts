import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { RedisStreamsClient } from '../client/redis-streams.client.js';
import { readyCommands, statsTarget } from '../health/server-stats.js';
import { sampleStreamStatsBatch, type SampledStreamStats } from '../health/stream-stats.js';
import { sampleBlockedKeys } from './blocked-key-gauges.js';
import { sampleSchedules } from './schedule-gauges.js';
import { withTimeout } from '../health/with-timeout.js';
import { CAPABILITY_NAMES, type ServerCapabilities } from '../redis/capabilities.js';
import { isConnectionClosedError } from '../redis/errors/reply-errors.js';
import type { RedisStreamsServer } from '../server/redis-streams.server.js';
import type { ConsumerView } from '../consumer/index.js';
import { clientWriteRecorder } from './client-recorder.js';
import { eventRecorders } from './event-recorders.js';
import { getOrCreateInstruments, type InstrumentSettings, type MetricInstruments } from './metric-instruments.js';
import type { MetricsAttachOptions } from './metrics-options.interface.js';
import { METRICS_DEFAULTS, METRICS_MESSAGES } from './metrics.constants.js';
import { loadPromClient } from './prom-client.loader.js';
import { readRedisMemory } from './redis-memory.js';

/** What one attached server holds: its event subscriptions and its sampling timer. */
interface Attachment {
  instruments: MetricInstruments;
  unsubscribe: Array<() => void>;
  timer: NodeJS.Timeout | null;
  idleSampleSize: number;
  sampleTimeoutMs: number;
  sampling: Promise<void> | null;
  lastError: string | null;
  lastMemoryError: string | null;
  /** When each read loop was first seen without a completed read (a loop that never reads ages). */
  firstSeen: WeakMap<ConsumerView, number>;
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
 * `consumer_lag_entries` (absent while Redis cannot tell), `dead_letter_entries`,
 * `group_consumers`, `blocked_keys`, `blocked_entries`, `blocked_oldest_seconds` (ordering keys held
 * back by `onDeadLetter: 'block-key'`), `stream_length_entries` (label `stream` only), `redis_memory_used_bytes` and
 * `redis_memory_max_bytes` (label `node`); per instance: `read_loop_last_read_age_seconds`,
 * `min_idle_time_seconds`. From clients (`attachClient`): `xadd_duration_seconds` (label
 * `stream`), `stream_retention_max_entries` / `stream_retention_max_age_seconds` (+ `trim`).
 *
 * ```ts
 * const metrics = new RedisStreamsMetrics().attach(server, { registry });
 * ```
 */
/** `ackDelete` → `ack_delete`: capability names as Prometheus label values. */
const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * Prometheus metrics (prom-client) of servers (`attach`) and producing clients (`attachClient`),
 * labelled by stream and group; docs/production.md "Health and metrics" lists them.
 */
@Injectable()
export class RedisStreamsMetrics implements OnApplicationShutdown {
  private readonly logger = new Logger(RedisStreamsMetrics.name);
  private readonly attachments = new Map<RedisStreamsServer, Attachment>();
  private readonly clients = new Set<RedisStreamsClient>();

  /**
   * Records the server's transport events and starts sampling its gauges. Attaching a server
   * again replaces its earlier attachment. Throws when prom-client is not installed.
   */
  attach(server: RedisStreamsServer, options: MetricsAttachOptions = {}): this {
    const instruments = instrumentsFor(options);
    this.detach(server);
    const recorders = eventRecorders(instruments);
    const unsubscribe = (Object.keys(recorders) as Array<keyof typeof recorders>).map((event) => {
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
      lastMemoryError: null,
      firstSeen: new WeakMap(),
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

  /**
   * Records a client's writes: `xadd_duration_seconds` per stream, and the retention each stream
   * is written with (`stream_retention_max_entries` / `_max_age_seconds`, set on the first write
   * after attaching). The histogram costs one clock reading per pipeline and one observation per
   * XADD; a client nobody attached does neither. Throws when prom-client is not installed.
   */
  attachClient(
    client: RedisStreamsClient,
    options: Pick<MetricsAttachOptions, 'registry' | 'prefix' | 'xaddDurationBuckets'> = {},
  ): this {
    const instruments = instrumentsFor(options);
    client.observeWrites(clientWriteRecorder(instruments, (message) => this.logger.warn(message)));
    this.clients.add(client);
    return this;
  }

  /** Stops recording a client's writes. */
  detachClient(client: RedisStreamsClient): void {
    if (this.clients.delete(client)) client.observeWrites(null);
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

  /** Detaches every server and client. */
  close(): void {
    this.detach();
    for (const client of [...this.clients]) this.detachClient(client);
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
    const consumers = [...server.getConsumers()];
    if (consumers.length === 0) return;
    // From memory, not Redis: a loop that cannot read because Redis is away must still age.
    this.setLoopGauges(attachment, consumers, Date.now());
    this.setCapabilityGauges(attachment.instruments, server.getCapabilities());
    try {
      const redis = readyCommands(server);
      const { sampleTimeoutMs, idleSampleSize } = attachment;
      const [sampled] = await Promise.all([
        withTimeout(
          sampleStreamStatsBatch(redis, consumers.map(statsTarget), idleSampleSize),
          sampleTimeoutMs,
          `Redis (figures of ${consumers.length} stream/groups)`,
        ),
        this.sampleMemory(redis, attachment),
        withTimeout(
          sampleSchedules(
            redis,
            consumers.map((c) => c.stream),
            attachment.instruments,
          ),
          sampleTimeoutMs,
          'Redis (stream schedules)',
        ),
        withTimeout(sampleBlockedKeys(redis, consumers, attachment.instruments), sampleTimeoutMs, 'Redis (blocked keys)'),
      ]);
      consumers.forEach((consumer, i) => this.setGauges(attachment.instruments, consumer, sampled[i]));
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

  /** What listen() probed: labels for dashboards and alerts (a node below its patch floor, a capability missing on one node). */
  private setCapabilityGauges(m: MetricInstruments, caps: ServerCapabilities | null): void {
    if (!caps || caps.nodes.length === 0) return;
    for (const name of CAPABILITY_NAMES) m.streamCapability.set({ capability: snakeCase(name) }, caps.all[name] ? 1 : 0);
    for (const n of caps.nodes) {
      m.redisNode.set({ node: n.node, server: n.server, version: n.version, patch_floor: n.patchFloor.floor ?? 'ok' }, 1);
    }
  }

  /** INFO memory of every node; its failure (e.g. an ACL user without +info) spares the stream gauges. */
  private async sampleMemory(redis: Redis, attachment: Attachment): Promise<void> {
    const { instruments: m, sampleTimeoutMs } = attachment;
    try {
      const nodes = await withTimeout(readRedisMemory(redis), sampleTimeoutMs, 'Redis INFO memory');
      for (const { node, usedBytes, maxBytes } of nodes) {
        m.redisMemoryUsed.set({ node }, usedBytes);
        m.redisMemoryMax.set({ node }, maxBytes);
      }
      // A node no longer read (a failed-over master) must not keep its last value for ever.
      const read = new Set(nodes.map((n) => n.node));
      for (const { labels } of (await m.redisMemoryUsed.get()).values) {
        if (labels.node !== undefined && !read.has(String(labels.node))) {
          m.redisMemoryUsed.remove({ node: labels.node });
          m.redisMemoryMax.remove({ node: labels.node });
        }
      }
      attachment.lastMemoryError = null;
    } catch (err) {
      const message = (err as Error).message;
      if (message !== attachment.lastMemoryError && !isConnectionClosedError(err)) {
        this.logger.warn(METRICS_MESSAGES.memoryFailed(message));
      }
      attachment.lastMemoryError = message;
    }
  }

  /** Read-loop age and the reclaim threshold: this instance's own figures. */
  private setLoopGauges(attachment: Attachment, consumers: ConsumerView[], now: number): void {
    const m = attachment.instruments;
    for (const consumer of consumers) {
      const labels = { stream: consumer.stream, group: consumer.group };
      m.minIdleTime.set(labels, consumer.options.minIdleTimeMs / 1_000);
      let since = consumer.lastReadAt;
      if (since === 0) {
        since = attachment.firstSeen.get(consumer) ?? now;
        attachment.firstSeen.set(consumer, since);
      }
      // A loop waiting for a free slot is as healthy as its handlers (liveness reasons the same way).
      m.readLoopAge.set(labels, consumer.waitingForRoomSince === 0 ? Math.max(0, now - since) / 1_000 : 0);
    }
  }

  private setGauges(m: MetricInstruments, consumer: ConsumerView, { stats, streamLength }: SampledStreamStats): void {
    const labels = { stream: consumer.stream, group: consumer.group };
    if (streamLength === null) m.streamLength.remove({ stream: consumer.stream });
    else m.streamLength.set({ stream: consumer.stream }, streamLength);
    if (stats instanceof Error) {
      // The group is gone until the read loop re-creates it: no figure is better than a stale one.
      this.logger.debug(stats.message);
      for (const gauge of [m.pending, m.oldestIdle, m.lag, m.deadLetters, m.consumers]) gauge.remove(labels);
      return;
    }
    m.pending.set(labels, stats.pending);
    m.oldestIdle.set(labels, stats.oldestIdleMs / 1_000);
    // The group's own entries in the shared dead-letter stream (its length when too long to count).
    m.deadLetters.set(labels, stats.groupDeadLetters ?? stats.deadLetters);
    m.consumers.set(labels, stats.consumers);
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

/** The instruments in the options' registry (created there on first use). */
function instrumentsFor(options: MetricsAttachOptions): MetricInstruments {
  const client = loadPromClient();
  return getOrCreateInstruments(client, {
    // The option is typed by shape (no prom-client in the public types); it is a prom-client Registry.
    registry: (options.registry as InstrumentSettings['registry'] | undefined) ?? client.register,
    prefix: options.prefix ?? METRICS_DEFAULTS.prefix,
    handlerDurationBuckets: options.handlerDurationBuckets ?? METRICS_DEFAULTS.handlerDurationBuckets,
    endToEndLatencyBuckets: options.endToEndLatencyBuckets ?? METRICS_DEFAULTS.endToEndLatencyBuckets,
    xaddDurationBuckets: options.xaddDurationBuckets ?? METRICS_DEFAULTS.xaddDurationBuckets,
  });
}

function hasEnded(server: RedisStreamsServer): boolean {
  try {
    return server.unwrap<Redis>().status === 'end';
  } catch {
    return false;
  }
}
