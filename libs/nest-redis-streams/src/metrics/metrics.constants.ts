/** Defaults of `MetricsAttachOptions`. */
export const METRICS_DEFAULTS = {
  prefix: 'redis_streams_',
  sampleIntervalMs: 15_000,
  sampleTimeoutMs: 5_000,
  idleSampleSize: 100,
  // prom-client's own defaults: handlers are mostly milliseconds to seconds.
  handlerDurationBuckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  // End to end includes queueing behind a backlog, so the range reaches minutes.
  endToEndLatencyBuckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
  // The operators' table: XADD p99 is normal up to 1 ms and alarming past 5 ms, so both are bounds.
  xaddDurationBuckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
};

/**
 * Every metric, without the prefix (default `redis_streams_`). Counters and histograms count
 * what this instance did; gauges sampled from Redis (pending, idle, lag, dead letters, consumers,
 * stream length, memory) describe the whole group, stream or node, so every instance reports the
 * same value: aggregate them with `max`, not `sum`. `read_loop_last_read_age_seconds` is this
 * instance's own loop; the retention gauges come from clients (producers), the rest from servers.
 */
export const METRIC_DEFINITIONS = {
  delivered: { type: 'counter', name: 'entries_delivered_total', help: 'Entries handed to a handler (retries count again).' },
  acked: { type: 'counter', name: 'entries_acked_total', help: 'Entries acknowledged after their handler succeeded.' },
  failed: { type: 'counter', name: 'entries_failed_total', help: 'Handler failures; the entry is retried or dead-lettered.' },
  reclaimed: { type: 'counter', name: 'entries_reclaimed_total', help: 'Entries taken over from idle consumers (XAUTOCLAIM).' },
  deadLettered: {
    type: 'counter',
    name: 'entries_dead_lettered_total',
    help: 'Entries moved to the dead-letter stream, by reason.',
  },
  lostByTrim: {
    type: 'counter',
    name: 'entries_lost_by_trim_total',
    help: 'Pending entries whose payload trimming deleted before they were acknowledged (tombstones written).',
  },
  leaseRenewals: { type: 'counter', name: 'lease_renewals_total', help: 'Leases of in-flight entries renewed by this consumer.' },
  leasesLost: { type: 'counter', name: 'leases_lost_total', help: 'In-flight entries this consumer lost to another consumer.' },
  skipped: {
    type: 'counter',
    name: 'skipped_total',
    help: 'Entries acked without running the handler, by reason (request-expired, reply-to-refused, other-group).',
  },
  leasesExpired: {
    type: 'counter',
    name: 'leases_expired_total',
    help: 'Handlers that ran past maxHandlerMs; their entries became reclaimable.',
  },
  partitionRebalances: {
    type: 'counter',
    name: 'partition_rebalances_total',
    help: "Changes of the set of partitions this instance owns (ownership: 'exclusive').",
  },
  partitionsOwned: {
    type: 'gauge',
    name: 'partitions_owned',
    help: "Partitions of the stream this instance owns now (ownership: 'exclusive').",
  },
  partitionsLost: {
    type: 'counter',
    name: 'partitions_lost_total',
    help: 'Partitions this instance lost because its ownership lease ran out (paused, cut off from Redis).',
  },
  handlerDuration: { type: 'histogram', name: 'handler_duration_seconds', help: 'Handler run time, by outcome (ok, error).' },
  deliveriesToSuccess: {
    type: 'histogram',
    name: 'deliveries_to_success',
    help: 'Deliveries an entry needed until its handler succeeded (1: the first try).',
  },
  endToEndLatency: {
    type: 'histogram',
    name: 'end_to_end_latency_seconds',
    help: 'Time from the entry id (when it was added) to its handler succeeding.',
  },
  pending: { type: 'gauge', name: 'pending_entries', help: 'Entries delivered to the group and not acknowledged (sampled).' },
  oldestIdle: {
    type: 'gauge',
    name: 'oldest_pending_idle_seconds',
    help: 'Longest idle time among the oldest pending entries: since their last delivery or failure, not the backdated idle of a retry back-off (sampled; lower bound, see collectStreamStats).',
  },
  lag: {
    type: 'gauge',
    name: 'consumer_lag_entries',
    help: 'Entries not yet delivered to the group (sampled; absent when unknown).',
  },
  deadLetters: {
    type: 'gauge',
    name: 'dead_letter_entries',
    help: "Entries of this group in the stream's dead-letter stream; its whole length past 100 entries (sampled).",
  },
  consumers: {
    type: 'gauge',
    name: 'group_consumers',
    help: 'Consumers known to the group, live or not (XINFO GROUPS, sampled).',
  },
  minIdleTime: {
    type: 'gauge',
    name: 'min_idle_time_seconds',
    help: "The handler's minIdleTimeMs: a pending entry idle longer is taken over by a reclaimer.",
  },
  readLoopAge: {
    type: 'gauge',
    name: 'read_loop_last_read_age_seconds',
    help: 'Seconds since the read loop last completed a read; 0 while every slot is busy (sampled).',
  },
  streamLength: { type: 'gauge', name: 'stream_length_entries', help: 'Entries in the stream (XINFO STREAM length, sampled).' },
  scheduledEntries: {
    type: 'gauge',
    name: 'scheduled_entries',
    help: "Entries waiting in the stream's schedule (delayed emits, long RetryLaters), sampled.",
  },
  scheduledOverdue: {
    type: 'gauge',
    name: 'scheduled_oldest_overdue_seconds',
    help: 'How long the first scheduled entry is past its due time; grows when no server moves the schedule (sampled).',
  },
  blockedKeys: {
    type: 'gauge',
    name: 'blocked_keys',
    help: "Ordering keys held back by onDeadLetter: 'block-key' (their entry failed or is parked), sampled.",
  },
  blockedEntries: {
    type: 'gauge',
    name: 'blocked_entries',
    help: 'Entries held back behind blocked ordering keys, waiting to run in order (sampled).',
  },
  blockedOldest: {
    type: 'gauge',
    name: 'blocked_oldest_seconds',
    help: 'How long the longest-blocked ordering key has been blocked; 0 when none is (sampled).',
  },
  retentionMaxEntries: {
    type: 'gauge',
    name: 'stream_retention_max_entries',
    help: 'Retention maxLen a client writes the stream with (trim: on-write = MAXLEN ~ on XADD, safe = periodic safe trim).',
  },
  retentionMaxAge: {
    type: 'gauge',
    name: 'stream_retention_max_age_seconds',
    help: 'Retention minIdAgeMs a client writes the stream with, in seconds (trim: on-write or safe).',
  },
  xaddDuration: {
    type: 'histogram',
    name: 'xadd_duration_seconds',
    help: "Client-side XADD time: from sending the batch's pipeline to Redis' reply.",
  },
  redisMemoryUsed: {
    type: 'gauge',
    name: 'redis_memory_used_bytes',
    help: 'INFO memory used_memory of each Redis node (label node = host:port; each master of a cluster; sampled).',
  },
  redisMemoryMax: {
    type: 'gauge',
    name: 'redis_memory_max_bytes',
    help: 'INFO memory maxmemory of each Redis node; 0 means no limit (sampled).',
  },
  streamCapability: {
    type: 'gauge',
    name: 'stream_capability',
    help: '1 when every Redis node has the stream capability (claim, idmp, ack_delete, trim_conditions, nack; probed at listen()), else 0.',
  },
  redisNode: {
    type: 'gauge',
    name: 'redis_node_info',
    help: "Always 1: each Redis node's server, version and patch_floor (ok, or the release with the stream RESTORE fix to upgrade to).",
  },
} as const;

/** Prometheus' names of one definition's series: a histogram adds _bucket, _sum and _count. */
export function seriesNames(prefix: string, definition: { type: string; name: string }): string[] {
  const base = `${prefix}${definition.name}`;
  return definition.type === 'histogram' ? [`${base}_bucket`, `${base}_sum`, `${base}_count`] : [base];
}

/** Metrics messages: full sentences naming the value and the fix. */
export const METRICS_MESSAGES = {
  promClientMissing:
    'RedisStreamsMetrics needs the optional peer dependency "prom-client" (version 15), which is not installed. ' +
    'Run `npm install prom-client`, or do not call attach().',
  listenerFailed: (event: string, cause: string) =>
    `Recording the "${event}" event in Prometheus metrics failed (${cause}); the entry itself is not affected.`,
  sampleFailed: (cause: string) =>
    `Sampling the stream gauges failed (${cause}); they keep their last values until a sample succeeds.`,
  memoryFailed: (cause: string) =>
    `Sampling Redis memory (INFO memory) failed (${cause}); redis_memory_* keep their last values. ` +
    'Under an ACL user, allow it with `+info` (see docs/production.md, "Production kit").',
};
