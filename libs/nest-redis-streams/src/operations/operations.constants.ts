import { DEFAULT_AUDIT_STREAM } from '../keys/index.js';

/** Defaults of the operations layer shared by the console and the CLI. */
export const OPERATIONS_DEFAULTS = {
  /** Audit stream of every write made through the console or the CLI. */
  auditStream: DEFAULT_AUDIT_STREAM,
  /** The audit stream keeps about this many writes (`MAXLEN ~`); refusals never count. */
  auditMaxLen: 10_000,
  /** The refused requests' stream (`<auditStream>:refused`) keeps about this many records. */
  auditRefusalsMaxLen: 1_000,
  /** The most partitions an ownership read looks at (probed, or asked for). */
  maxPartitions: 1_024,
  /** A group whose oldest pending entry is idle this long is shown as stalled. */
  stalledAfterMs: 60_000,
  /** A consumer idle for less than this counts as active (XGROUP SETID is refused while one is). */
  activeConsumerMs: 30_000,
  /** PEL and dead-letter page size. */
  pageSize: 50,
  /** Largest page anyone may ask for. */
  maxPageSize: 1_000,
  /** A dry run or a filtered re-drive reads at most this many entries (and says when it stopped). */
  scanLimit: 10_000,
  /** Streams found by SCAN: how many keys one SCAN call looks at. */
  scanCount: 1_000,
};

/** Bounds of one search request (entries looked at, time, matches returned); see docs/search.md. */
export const SEARCH_DEFAULTS = {
  /** Matches returned by one request unless it asks for fewer or more. */
  limit: 50,
  maxLimit: 1_000,
  /** Entries one request looks at unless it asks otherwise. */
  budgetEntries: 10_000,
  maxBudgetEntries: 1_000_000,
  /** Milliseconds one request may run unless it asks otherwise. */
  budgetMs: 2_000,
  maxBudgetMs: 30_000,
  /** Entries one Redis read returns at most (XRANGE/XREVRANGE/XPENDING COUNT). */
  pageSize: 500,
  /** Characters (about bytes) one step of reads fetches at most, however much time is left. */
  maxReadChars: 4 * 1024 * 1024,
  /** A step may fetch as much again as all steps before it, and at least this many characters. */
  readFloorChars: 64 * 1024,
};
