/** `send()` to a stream that no consumer group reads: no handler could answer, so nothing was written. */
export class NoMessageHandlerError extends Error {
  override readonly name = 'NoMessageHandlerError';
  constructor(
    message: string,
    /** Stream the request was meant for. */
    readonly stream: string,
  ) {
    super(message);
  }
}
