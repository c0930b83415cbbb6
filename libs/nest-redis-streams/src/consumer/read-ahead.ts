/**
 * Read-ahead of a handler whose `prefetchCount` is left unset: never less than the fixed default
 * of earlier versions (64), and up to 256 entries while the handler keeps up a pace at which
 * they are at most ~50 ms of work. A fast handler then pays one read and one ack per 256 entries
 * instead of per 64 (the round trips, not the entries, were most of its cost: BENCHMARKS.md,
 * row 9), while a slow one never holds more than before, so it takes no more from other
 * consumers of its group and a crash spends no more read-but-not-run deliveries.
 */
export const AUTO_READ_AHEAD = { min: 64, max: 256, workMs: 50 };

/** How many entries a consumer may hold at once: fixed, or sized by the handler's pace. */
export class ReadAhead {
  private current: number;
  private settledInWindow = 0;
  private windowStartedAt = -1;

  /**
   * @param fixed the `prefetchCount` the user chose (or a batch handler's), or `undefined` for
   *   the automatic read-ahead
   * @param concurrency at least this many, so that every slot can be filled by one read
   */
  constructor(
    private readonly fixed: number | undefined,
    private readonly concurrency: number,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.current = fixed ?? this.floor;
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
    if (this.fixed !== undefined) return;
    if (this.windowStartedAt < 0) this.windowStartedAt = this.clock();
    if (++this.settledInWindow < this.current) return;
    const now = this.clock();
    const msPerEntry = (now - this.windowStartedAt) / this.settledInWindow;
    const fits = msPerEntry > 0 ? Math.floor(AUTO_READ_AHEAD.workMs / msPerEntry) : Number.POSITIVE_INFINITY;
    this.current = Math.min(this.ceiling, Math.max(this.floor, fits));
    this.settledInWindow = 0;
    this.windowStartedAt = now;
  }

  private get floor(): number {
    return Math.max(AUTO_READ_AHEAD.min, this.concurrency);
  }

  private get ceiling(): number {
    return Math.max(AUTO_READ_AHEAD.max, this.concurrency);
  }
}
