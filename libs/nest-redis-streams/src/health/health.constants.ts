/** Defaults of `StreamHealthThresholds`: past these a stream/group fails readiness. */
export const THRESHOLD_DEFAULTS = {
  // Four times the default minIdleTimeMs (30 s): by then a reclaimer anywhere should have taken it.
  maxOldestIdleMs: 120_000,
  maxPending: 10_000,
  maxLag: 10_000,
  // Any dead letter needs a human; it degrades readiness rather than failing it.
  maxDeadLetters: 0,
};

/** Defaults of `ReadinessOptions` and `LivenessOptions` beside the thresholds. */
export const HEALTH_DEFAULTS = {
  timeoutMs: 2_000,
  idleSampleSize: 100,
  /**
   * Dead-letter streams up to this length are counted per group on every check: reading 100
   * records with their error texts costs Redis ~0.3 ms, 1,000 cost ~4 ms (too long a pause).
   */
  deadLetterCountLimit: 100,
  /** Liveness grace: this many blocking reads (`blockMs`) ... */
  graceBlockReads: 3,
  /** ... plus this much slack for a slow round trip or a reconnect. */
  graceSlackMs: 5_000,
};

/** Health messages: full sentences naming the stream, the group, the figure and the limit. */
export const HEALTH_MESSAGES = {
  overLimit: (stream: string, group: string, what: string, figure: string, option: string, limit: string) =>
    `Stream "${stream}" group "${group}": ${what} is ${figure}, above ${option} ${limit}.`,
  statsFailed: (stream: string, group: string, cause: string) =>
    `Stream "${stream}" group "${group}": could not read its figures (${cause}).`,
  noGroup: (stream: string, group: string) =>
    `Stream "${stream}" has no consumer group "${group}" (deleted, FLUSHALL, or Redis restarted without data); ` +
    'the server re-creates it on its next read.',
  timedOut: (what: string, ms: number) => `${what} did not answer within ${ms} ms (timeoutMs).`,
  notConnected: (status: string) => `The Redis commands connection is "${status}", not "ready".`,
  readLoopStalled: (stream: string, group: string, ageMs: number, graceMs: number) =>
    `Stream "${stream}" group "${group}": the read loop has not completed a read for ${ageMs} ms ` +
    `(grace ${graceMs} ms, graceMs).`,
  handlerHung: (stream: string, group: string, id: string, runningMs: number, maxMs: number) =>
    `Stream "${stream}" group "${group}": the handler of entry ${id} has been running for ${runningMs} ms ` +
    `(maxHandlerMs ${maxMs}).`,
  prefetchFull: (held: number) =>
    ` All ${held} prefetch slots hold unfinished entries: no handler has finished one in that time.`,
};
