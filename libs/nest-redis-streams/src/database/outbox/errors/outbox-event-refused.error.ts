/**
 * `Outbox.add` refused an event the relay's client could never publish (over its
 * `maxPayloadBytes`, or not serializable by its serializer). Nothing was added, no statement ran:
 * the caller's transaction is still usable. `cause` is the client's own error.
 */
export class OutboxEventRefusedError extends Error {
  override readonly name = 'OutboxEventRefusedError';
  constructor(
    message: string,
    /** The stream (pattern) the event was meant for. */
    readonly stream: string,
    /** The event's id. */
    readonly eventId: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
