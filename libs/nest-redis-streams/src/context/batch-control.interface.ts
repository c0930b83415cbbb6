/** What a batch handler's context may do with the batch: report entries that failed. */
export interface BatchControl {
  /** Records that the entry at `index` failed with `error` (validated by the context). */
  fail(index: number, error: unknown): void;
  /** True once the handler finished: outcomes are decided, fail() is too late. */
  readonly closed: boolean;
}
