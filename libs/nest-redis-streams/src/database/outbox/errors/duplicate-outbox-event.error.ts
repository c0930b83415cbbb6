/**
 * `Outbox.add` found an event with the same `eventId` in the outbox already (one row per id).
 * Nothing was added and the caller's transaction is still usable (the insert does nothing on the
 * conflict instead of failing): catch it when adding the same business fact twice is expected.
 */
export class DuplicateOutboxEventError extends Error {
  override readonly name = 'DuplicateOutboxEventError';
  constructor(
    message: string,
    /** The id that is taken. */
    readonly eventId: string,
  ) {
    super(message);
  }
}
