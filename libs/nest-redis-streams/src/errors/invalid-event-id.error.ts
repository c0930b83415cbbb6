/**
 * A producer's event id that consumers could not keep apart from another one (not a string, empty,
 * not well-formed text, or holding U+FFFD); nothing was written.
 */
export class InvalidEventIdError extends Error {
  override readonly name = 'InvalidEventIdError';
  constructor(
    message: string,
    /** The refused value, as given. */
    readonly eventId: unknown,
  ) {
    super(message);
  }
}
