/** Limits past which a stream/group makes readiness fail (pending, idle, lag) or degrade (dead letters). */
export interface StreamHealthThresholds {
  /**
   * Longest a pending entry may sit idle (not delivered, claimed or renewed) before readiness fails:
   * a consumer died or hangs and no reclaimer took the entry over. `Infinity` turns it off.
   * @default 120000
   */
  maxOldestIdleMs?: number;
  /**
   * Most entries the group may have delivered and not yet acknowledged. `Infinity` turns it off.
   * @default 10000
   */
  maxPending?: number;
  /**
   * Most entries not yet delivered to the group (XINFO GROUPS `lag`): consumers slower than
   * producers. An unknown lag (Redis reports null) never fails. `Infinity` turns it off.
   * @default 10000
   */
  maxLag?: number;
  /**
   * Most entries the dead-letter stream may hold before readiness reports `degraded` (the check
   * still passes; Terminus answers 200 with status "degraded"). `Infinity` turns it off.
   * @default 0
   */
  maxDeadLetters?: number;
}

/** Thresholds for one stream, or one group of it, that replace the general ones. */
export interface StreamThresholdOverride extends StreamHealthThresholds {
  /** The stream key as in Redis (with `keyPrefix`) or the handler's pattern. */
  stream: string;
  /**
   * The group; without it the override applies to every group of the stream.
   * @default undefined (all groups)
   */
  group?: string;
}

/** Options of `RedisStreamsHealthIndicator.isReady()`. */
export interface ReadinessOptions extends StreamHealthThresholds {
  /**
   * Per stream/group thresholds; the first matching entry wins, unset fields fall back to the
   * general thresholds.
   * @default []
   */
  overrides?: StreamThresholdOverride[];
  /**
   * Longest the check waits for Redis before reporting down.
   * @default 2000
   */
  timeoutMs?: number;
  /**
   * How many of the oldest pending entries (by id) are read to find the longest idle time. Bounds
   * the cost of the check; see `collectStreamStats`.
   * @default 100
   */
  idleSampleSize?: number;
}

/** Options of `RedisStreamsHealthIndicator.isLive()`. */
export interface LivenessOptions {
  /**
   * How long a read loop may go without completing a read before the instance counts as wedged.
   * @default 3 × the server's blockMs + 5000
   */
  graceMs?: number;
  /**
   * Longest a single handler may run before the instance counts as wedged. Lease renewal hides a
   * hung handler's entry from the idle time, so this is what shows it.
   * @default each handler's `maxHandlerMs` (the life of its lease; 5 minutes unless set)
   */
  maxHandlerMs?: number;
  /**
   * Longest the PING may take before Redis counts as unreachable.
   * @default 2000
   */
  timeoutMs?: number;
}
