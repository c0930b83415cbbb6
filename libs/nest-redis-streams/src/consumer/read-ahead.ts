/**
 * Read-ahead of a handler whose `prefetchCount` is left unset: never less than the fixed default
 * of earlier versions (64), and up to 256 entries while the handler keeps up a pace at which
 * they are at most ~50 ms of work. A fast handler then pays one read and one ack per 256 entries
 * instead of per 64 (the round trips, not the entries, were most of its cost: BENCHMARKS.md,
 * row 9), while a slow one never holds more than before, so it takes no more from other
 * consumers of its group and a crash spends no more read-but-not-run deliveries. The floor is
 * the resolved prefetchCount: SERVER_DEFAULTS' 64, or concurrency when larger.
 */
export const AUTO_READ_AHEAD = { max: 256, workMs: 50 };

/** How many entries a consumer may hold at once: fixed, or sized by the handler's pace. */
export class ReadAhead {
  private current: number;
  private settledInWindow = 0;
  private windowStartedAt = -1;
  private readonly ceiling: number;

  /**
   * @param prefetchCount the resolved prefetchCount (at least `concurrency`): kept as it is, or,
   *   with `auto`, the floor the read-ahead starts from and never goes below
   * @param auto no prefetchCount was given: size the read-ahead by the handler's pace
   */
  constructor(
    private readonly prefetchCount: number,
    private readonly auto: boolean,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.current = prefetchCount;
    this.ceiling = Math.max(AUTO_READ_AHEAD.max, prefetchCount);
  }

  get limit(): number {
    return this.current;
  }

  /**
   * An entry settled. Every `limit` settles, the pace of that window sets the next limit: as
   * many entries as the last window settled in `workMs`. A window that waited for entries to
   * arrive (no backlog) reads as a slow pace, and the limit falls back to the floor, where a
   * read-ahead changes nothing.
   */
  settled(): void {
    if (!this.auto) return;
    if (this.windowStartedAt < 0) this.windowStartedAt = this.clock();
    if (++this.settledInWindow < this.current) return;
    const now = this.clock();
    const msPerEntry = (now - this.windowStartedAt) / this.settledInWindow;
    const fits = msPerEntry > 0 ? Math.floor(AUTO_READ_AHEAD.workMs / msPerEntry) : Number.POSITIVE_INFINITY;
    this.current = Math.min(this.ceiling, Math.max(this.prefetchCount, fits));
    this.settledInWindow = 0;
    this.windowStartedAt = now;
  }
}
