import { hostname } from 'node:os';
import type { AckMode } from './interfaces/stream-handler-options.interface.js';

/** Defaults of `RedisStreamsServerOptions`, merged once in the server's constructor. */
export const SERVER_DEFAULTS = {
  keyPrefix: '',
  group: 'nest',
  startId: '0',
  concurrency: 1,
  // Read-ahead: one XREADGROUP fetches up to 64 entries while handlers still run one at a time
  // and in stream order; measured 6-9x the throughput of one round trip per entry (BENCHMARKS.md,
  // row 9). Raised to `concurrency` when that is larger. Where nobody set it, the consumer raises
  // it further for a fast handler (consumer/read-ahead.ts).
  prefetchCount: 64,
  ackMode: 'auto' as AckMode,
  maxDeliveries: 5,
  minIdleTimeMs: 30_000,
  blockMs: 2_000,
  shutdownTimeoutMs: 10_000,
  leaseRenewal: true,
  // Semantically identical to Nest's pipeline where used (docs/performance.md, "Direct handlers").
  directHandlers: true,
  // Owner checks only where a claim can have happened since the read (docs/RELIABILITY.md, "Cheap acks").
  checkEveryAck: false,
  // Claimable entries without waiting for a reclaim round, on servers that can (docs/performance.md).
  claimReads: true,
  reclaimIntervalMs: 5_000,
  reclaimCount: 100,
  scheduleCheckMs: 1_000,
  retryBackoffMs: 1_000,
  removeIdleConsumersAfterMs: 0,
  // Kafka's max.poll.interval.ms default: a handler past it is taken for hung, not slow.
  maxHandlerMs: 300_000,
};

/** Field names of this library's envelope (wire format v1, see docs/handlers.md, "Wire format"). */
export const ENVELOPE = {
  version: 'v',
  versionValue: 'nrs/1',
  eventId: 'event_id',
  data: 'data',
  headers: 'headers',
  publishedAt: 'published_at',
  replyTo: 'reply_to',
  correlationId: 'correlation_id',
  /** A request's deadline (ms since epoch): past it the caller has given up, so it is not run. */
  deadline: 'deadline',
  /**
   * Set by a re-drive on any entry (envelope or foreign): only this group runs it; the stream's
   * other groups, which handled it the first time, acknowledge it unhandled.
   */
  targetGroup: 'nrs:group',
  /** Set by a re-drive: the id of the dead letter the entry came back from (its lineage). */
  redrivenFrom: 'nrs:redriven_from',
  /** Set by a re-drive: the id the entry had when it was first parked, kept across re-drives. */
  originalId: 'nrs:original_id',
  /** On an entry held behind its blocked ordering key (`onDeadLetter: 'block-key'`): the id it had. */
  heldFrom: 'nrs:held_from',
  /** On the dead letter of an entry whose ordering key it blocks: that key. */
  blockedKey: 'nrs:blocked_key',
} as const;

/** Largest wait between attempts to reach Redis again after a connection error. */
export const MAX_RECONNECT_BACKOFF_MS = 5_000;

export function defaultRedisUrl(): string {
  return process.env.REDIS_URL || 'redis://127.0.0.1:6379';
}

/** Stable per instance: the pod name in Kubernetes, the host name elsewhere; never a pid. */
export function defaultConsumerName(): string {
  return process.env.HOSTNAME || hostname();
}
