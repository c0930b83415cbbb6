/** How far one trim goes: a length, an age, or both (each one is applied). */
export interface TrimTarget {
  /** Keep about this many of the newest entries (`MAXLEN ~ n`). */
  maxLen?: number;
  /** Remove entries older than this many milliseconds (`MINID ~ <now - age>-0`). */
  minIdAgeMs?: number;
}

/**
 * Retention of a stream written by `RedisStreamsClient`. Set exactly one of `maxLen` and
 * `minIdAgeMs`. Plain retention trims on every XADD, which ignores consumer groups: entries that a
 * group has not processed yet can be deleted. `safe: true` trims periodically instead, never below
 * what any group still needs.
 */
export interface StreamRetention extends TrimTarget {
  /**
   * Trim only entries that every consumer group has acknowledged, in a periodic `StreamTrimmer`
   * run, instead of `MAXLEN`/`MINID` on each XADD. A client trims the streams it has written to
   * since it connected.
   * @default false
   */
  safe?: boolean;
  /**
   * Retention by acknowledgement, without `maxLen`/`minIdAgeMs`: a periodic run removes every
   * entry all consumer groups have acknowledged and nothing else (`XTRIM … ACKED` on Redis 8.2+,
   * the groups' floor elsewhere), so the stream stays small and nothing undelivered is trimmed.
   * See `trimAcked`.
   * @default false
   */
  acked?: boolean;
  /**
   * Period of the safe trim (`safe: true`); with a plain `maxLen`, period of the check that warns
   * when a group's backlog (pending + lag) is larger than `maxLen`.
   * @default 10000
   */
  intervalMs?: number;
}
