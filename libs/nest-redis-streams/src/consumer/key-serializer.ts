/**
 * Runs tasks of the same key one after another, in the order they were submitted, while tasks of
 * different keys run concurrently. The map only holds keys with a task in progress.
 */
export class KeySerializer {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key);
    const result = previous ? previous.then(task) : task();
    // The chain must not reject: a failed entry must not stop the next one of its key.
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Keys with work in progress (for tests and diagnostics). */
  get size(): number {
    return this.tails.size;
  }
}
