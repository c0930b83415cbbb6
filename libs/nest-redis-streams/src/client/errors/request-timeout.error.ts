/** `send()` got no (last) reply within `requestTimeoutMs`; the request may still be handled. */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
  constructor(
    message: string,
    /** Stream the request was written to. */
    readonly stream: string,
  ) {
    super(message);
  }
}
