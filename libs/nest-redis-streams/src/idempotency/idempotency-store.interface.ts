/** What `begin` found for a key. */
export type IdempotencyState = 'new' | 'done' | 'busy';

/**
 * Remembers which business events already had their effect. The Redis store below keeps the
 * marker beside the stream; a database store should write the "done" marker in the same
 * transaction as the effect (a processed_events table with a unique event id), which closes the
 * last window: a crash between effect and marker.
 */
export interface IdempotencyStore {
  /**
   * Claims `key` for processing. `new`: run the effect, then `complete`. `done`: it already
   * ran, skip it and ack. `busy`: someone else holds the claim right now, retry later.
   */
  begin(key: string, processingTtlMs: number): Promise<IdempotencyState>;
  /** Marks the effect as applied, kept for `doneTtlMs`. */
  complete(key: string, doneTtlMs: number): Promise<void>;
  /** Drops a processing claim after a failure so that a retry can run the effect. */
  release(key: string): Promise<void>;
  /**
   * True when `key` is marked done; read-only. Optional: `runOnce` uses it only to honour
   * markers of the old key shape (`IdempotencyOptions.legacyKeys`) and skips that without it.
   */
  isDone?(key: string): Promise<boolean>;
}
