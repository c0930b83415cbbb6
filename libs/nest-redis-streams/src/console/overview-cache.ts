/**
 * Shares one read among every open page: a read younger than `maxAgeMs` (or still in flight) is
 * reused, so Redis work per refresh period stays one read however many people watch.
 */
export class SharedRead<T> {
  private last: { at: number; value: Promise<T> } | null = null;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly maxAgeMs: number,
  ) {}

  get(): Promise<T> {
    const now = Date.now();
    if (!this.last || now - this.last.at >= this.maxAgeMs) {
      const value = this.read();
      this.last = { at: now, value };
      // A failed read is not shared: the next viewer tries again.
      value.catch(() => (this.last = null));
    }
    return this.last.value;
  }
}
