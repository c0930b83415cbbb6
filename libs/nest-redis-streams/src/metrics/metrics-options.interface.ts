import type { PromRegistry } from './prom-registry.interface.js';

/** Options of `RedisStreamsMetrics.attach()`. */
export interface MetricsAttachOptions {
  /**
   * Registry the metrics are registered in (found and reused there when they exist, so several
   * servers can share them).
   * @default prom-client's global `register`
   */
  registry?: PromRegistry;
  /**
   * Prefix of every metric name.
   * @default 'redis_streams_'
   */
  prefix?: string;
  /**
   * How often the gauges (pending, oldest idle, lag, dead letters, consumers, stream length, Redis
   * memory, read-loop age) are sampled; 0 turns
   * sampling off (call `sampleNow()` yourself, e.g. before a scrape).
   * @default 15000
   */
  sampleIntervalMs?: number;
  /**
   * Longest one sample may wait for Redis.
   * @default 5000
   */
  sampleTimeoutMs?: number;
  /**
   * How many of the oldest pending entries are read for `oldest_pending_idle_seconds`.
   * @default 100
   */
  idleSampleSize?: number;
  /**
   * Buckets of `handler_duration_seconds`.
   * @default [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
   */
  handlerDurationBuckets?: number[];
  /**
   * Buckets of `end_to_end_latency_seconds`.
   * @default [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900]
   */
  endToEndLatencyBuckets?: number[];
  /**
   * Buckets of `xadd_duration_seconds` (clients, see `attachClient`).
   * @default [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1]
   */
  xaddDurationBuckets?: number[];
}
