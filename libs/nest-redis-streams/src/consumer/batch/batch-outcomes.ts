import type { BatchControl } from '../../context/batch-control.interface.js';

/** The per-entry failures a batch handler reported through `batch.fail()`, by index. */
export class BatchOutcomes implements BatchControl {
  private failures: Map<number, unknown> | null = null;
  closed = false;

  fail(index: number, error: unknown): void {
    (this.failures ??= new Map()).set(index, error);
  }

  /** Whether the entry at `index` was failed, and with what. */
  failureOf(index: number): { error: unknown } | null {
    return this.failures?.has(index) ? { error: this.failures.get(index) } : null;
  }
}
