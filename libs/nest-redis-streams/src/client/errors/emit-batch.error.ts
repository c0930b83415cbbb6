/** Why one entry of an `emitBatch()` was not stored, by its index in the array given. */
export interface EmitBatchFailure {
  /** Index of the entry in the array passed to `emitBatch()`. */
  readonly index: number;
  /**
   * PayloadTooLargeError, PublishFailedError (its `maybeStored` says whether the entry may be in
   * the stream anyway), ClientClosedError, or Nest's InvalidMessageException for a null entry.
   */
  readonly error: Error;
}

/**
 * Some entries of an `emitBatch()` were not stored. `ids[i]` is the id of entry i when it was
 * stored, undefined when it was not; `failures` says why, per entry. When an entry could not be
 * encoded (null, not serializable, over `maxPayloadBytes`) nothing at all was written: `failures`
 * lists the bad entries and every id is undefined.
 */
export class EmitBatchError extends Error {
  override readonly name = 'EmitBatchError';
  constructor(
    message: string,
    /** Stream of the pattern (a partitioned pattern's entries went to its partitions). */
    readonly stream: string,
    /** Per entry, in the order given: its id when stored, else undefined. */
    readonly ids: ReadonlyArray<string | undefined>,
    /** The entries that failed, in index order, each with its own error. */
    readonly failures: readonly EmitBatchFailure[],
  ) {
    super(message, { cause: failures[0]?.error });
  }
}
