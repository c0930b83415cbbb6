import { SEARCH_DEFAULTS } from './operations.constants.js';

/** How much one search may do. */
export interface SearchBudget {
  limit: number;
  entries: number;
  ms: number;
  /** Entries one Redis read asks for at most. */
  pageSize: number;
}

/**
 * Sizes the reads of one search request by what it can still look at. Entries fetched but not
 * looked at when the request stops are fetched again by the next one, so a read must not fetch
 * much more than the request will look at: with entries of 512 KB and a budget of 1 ms, pages of
 * 50 made Redis send 15 times the data walked, and each read ran far past the budget. So:
 * - the first read fetches one entry per stream key (nothing is known about their size yet);
 * - a read fetches at most as many characters again as all reads before it (at least
 *   `SEARCH_DEFAULTS.readFloorChars`), and at most `SEARCH_DEFAULTS.maxReadChars`, from the
 *   characters per entry seen so far: what is left over when the request stops is at most about
 *   what it looked at;
 * - and no more entries than the time left can look at, at the pace measured so far;
 * - the entry count grows as before (from the result limit, doubling) up to `pageSize`.
 * A read always fetches at least one entry, so a request overruns its time by at most one read of
 * one entry per key.
 */
export class SearchReadSizer {
  private reads = 0;
  private fetchedEntries = 0;
  private fetchedChars = 0;
  private entryCap: number;

  constructor(
    private readonly budget: SearchBudget,
    private readonly started: number,
    private readonly now: () => number = Date.now,
  ) {
    this.entryCap = Math.min(budget.pageSize, Math.max(16, budget.limit));
  }

  /** Entries each of `keys` reads made together may ask for, after `scanned` entries were looked at. */
  next(keys: number, scanned: number): number {
    const left = this.budget.entries - scanned;
    if (this.fetchedEntries === 0) return 1;
    const perEntry = Math.max(1, this.fetchedChars / this.fetchedEntries);
    const chars = Math.min(SEARCH_DEFAULTS.maxReadChars, Math.max(SEARCH_DEFAULTS.readFloorChars, this.fetchedChars));
    let entries = Math.min(left, this.entryCap, Math.floor(chars / perEntry));
    const elapsed = this.now() - this.started;
    if (scanned > 0 && elapsed > 0) entries = Math.min(entries, Math.floor(((this.budget.ms - elapsed) * scanned) / elapsed));
    return Math.max(1, Math.min(this.budget.pageSize, Math.floor(entries / keys)));
  }

  /** Counts what one step's reads returned (`chars`: the characters of every entry read). */
  fetched(entries: number, chars: number): void {
    if (this.reads > 0) this.entryCap = Math.min(this.budget.pageSize, this.entryCap * 2);
    this.reads += 1;
    this.fetchedEntries += entries;
    this.fetchedChars += chars;
  }
}
