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
};

/**
 * Every metric, without the prefix (default `redis_streams_`). Counters and histograms count
 * what this instance did; gauges are sampled from Redis and describe the whole group, so every
 * instance reports the same value: aggregate them with `max`, not `sum`.
 */
export const METRIC_DEFINITIONS = {
  delivered: { name: 'entries_delivered_total', help: 'Entries handed to a handler (retries count again).' },
  acked: { name: 'entries_acked_total', help: 'Entries acknowledged after their handler succeeded.' },
  failed: { name: 'entries_failed_total', help: 'Handler failures; the entry is retried or dead-lettered.' },
  reclaimed: { name: 'entries_reclaimed_total', help: 'Entries taken over from idle consumers (XAUTOCLAIM).' },
  deadLettered: { name: 'entries_dead_lettered_total', help: 'Entries moved to the dead-letter stream, by reason.' },
  lostByTrim: {
    name: 'entries_lost_by_trim_total',
    help: 'Pending entries whose payload trimming deleted before they were acknowledged (tombstones written).',
  },
  leaseRenewals: { name: 'lease_renewals_total', help: 'Leases of in-flight entries renewed by this consumer.' },
  leasesLost: { name: 'leases_lost_total', help: 'In-flight entries this consumer lost to another consumer.' },
  skipped: {
    name: 'skipped_total',
    help: 'Entries acked without running the handler, by reason (request-expired, reply-to-refused, other-group).',
  },
  leasesExpired: { name: 'leases_expired_total', help: 'Handlers that ran past maxHandlerMs; their entries became reclaimable.' },
  handlerDuration: { name: 'handler_duration_seconds', help: 'Handler run time, by outcome (ok, error).' },
  deliveriesToSuccess: {
    name: 'deliveries_to_success',
    help: 'Deliveries an entry needed until its handler succeeded (1: the first try).',
  },
  endToEndLatency: {
    name: 'end_to_end_latency_seconds',
    help: 'Time from the entry id (when it was added) to its handler succeeding.',
  },
  pending: { name: 'pending_entries', help: 'Entries delivered to the group and not acknowledged (sampled).' },
  oldestIdle: {
    name: 'oldest_pending_idle_seconds',
    help: 'Longest idle time among the oldest pending entries (sampled; lower bound, see collectStreamStats).',
  },
  lag: { name: 'consumer_lag_entries', help: 'Entries not yet delivered to the group (sampled; absent when unknown).' },
  deadLetters: {
    name: 'dead_letter_entries',
    help: "Entries of this group in the stream's dead-letter stream; its whole length past 100 entries (sampled).",
  },
} as const;

/** Metrics messages: full sentences naming the value and the fix. */
export const METRICS_MESSAGES = {
  promClientMissing:
    'RedisStreamsMetrics needs the optional peer dependency "prom-client" (version 15), which is not installed. ' +
    'Run `npm install prom-client`, or do not call attach().',
  listenerFailed: (event: string, cause: string) =>
    `Recording the "${event}" event in Prometheus metrics failed (${cause}); the entry itself is not affected.`,
  sampleFailed: (cause: string) =>
    `Sampling the stream gauges failed (${cause}); they keep their last values until a sample succeeds.`,
};
