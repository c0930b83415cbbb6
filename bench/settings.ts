// Every knob of the benchmark in one place, so BENCHMARKS.md can quote them and a run can be
// compared with another by reading one file.

/** Entries every drain row reads (rows 1 and 2 read the same pre-filled stream). */
export const DRAIN_ENTRIES = 200_000;

/** COUNT of the hand-written loop's XREADGROUP: one read and one XACK per this many entries. */
export const RAW_READ_COUNT = 500;

/** What a user would pick for throughput: many handlers at once, a read batch like the raw loop's. */
export const THROUGHPUT_SETTINGS = { concurrency: 64, prefetchCount: 500 };

/** A second drain setting for handlers as cheap as the no-op one: every read-ahead entry running. */
export const WIDE_SETTINGS = { concurrency: 256, prefetchCount: 512 };

/**
 * Concurrency sweep with a 1 ms async handler. Slow settings read fewer entries so the whole run
 * stays under 3 minutes; each run still lasts about 1-3 s.
 */
export const SLEEP_RUNS = [
  { concurrency: 1, entries: 2_000 },
  { concurrency: 16, entries: 20_000 },
  { concurrency: 64, entries: 60_000 },
  { concurrency: 256, entries: 100_000 },
];
export const SLEEP_MS = 1;

/**
 * Paced load for the latency rows; the warm-up second is sent but not measured (JIT, pools). The
 * variants alternate for `rounds` rounds; each row is the round with its median p99.
 */
export const LATENCY = { rate: 5_000, seconds: 10, warmupSeconds: 1, rounds: 3 };

/** Producer rows: entries written, and how many `emit` callers wait at once. */
export const PRODUCER = { entries: 100_000, inFlight: 100 };

/** Memory row: the backlog drained, and how long the consumer idles before it is measured. */
export const MEMORY = {
  entries: 1_000_000,
  /** Consumers alternate this many times; each row is the round with that consumer's median peak. */
  rounds: 3,
  idleMs: 3_000,
  sampleEveryMs: 25,
  /** The V8 flag of the informational row: a 4 MiB cap on each young-generation semi-space. */
  cappedYoungGeneration: '--max-semi-space-size=4',
};

/**
 * Cluster row: one logical stream in partitions, drained from one redis-server and from a
 * 3-master cluster (no replicas: the row measures spreading load, not replication).
 */
export const CLUSTER = { entries: 100_000, partitions: 6, masters: 3 };

/** XADDs per pipeline when pre-filling (and in the raw producer row). */
export const PREFILL_BATCH = 5_000;

/**
 * The targets the table marks, against references measured in the same run (issue 15 made the
 * references the hand-written loop, and for p99 and memory that loop in a process with NestJS
 * loaded; issue 29 raised the drain target and added Redis' CPU):
 * - drainRatio: row 2 (tuned) against the loop of row 1;
 * - redisCpuRatio: redis-server CPU per entry of row 2 against row 1's, least of the rounds;
 * - p99Ratio: the transport's p99 at 5,000/s against the NestJS-loaded loop's p99;
 * - memoryRatio: the transport's peak RSS draining 1M entries against that loop's peak.
 */
export const TARGETS = { drainRatio: 0.95, redisCpuRatio: 1.2, p99Ratio: 1.2, memoryRatio: 1.1 };

/**
 * The defaults set (issue 15): this transport with no tuning options, concurrency 1 with each
 * read-ahead a default could have, the other transport with its own defaults and the raw loop,
 * all on one stream of this many entries (at a few thousand msgs/s the slow rows last ~10 s).
 */
export const DEFAULTS_SET = {
  entries: 50_000,
  prefetchCounts: [1, 16, 32, 64, 128, 256],
  /**
   * Targets for no options at all: ≥ 3× the other transport in every round (issue 15) and ≥ 0.8×
   * the hand-written loop in the median round (issue 29).
   */
  otherRatio: 3,
  rawRatio: 0.8,
};
