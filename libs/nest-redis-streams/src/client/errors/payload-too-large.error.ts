/** `emit()`/`send()` data larger than `maxPayloadBytes`; nothing was written. */
export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError';
  constructor(
    message: string,
    /** Stream the entry was meant for. */
    readonly stream: string,
    /** Size of the entry in bytes. */
    readonly bytes: number,
  ) {
    super(message);
  }
}
