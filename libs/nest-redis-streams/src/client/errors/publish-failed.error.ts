/**
 * An entry could not be written (Redis unreachable, out of memory, rejected). `maybeStored` tells
 * whether it may have been stored anyway (the connection broke after the command was sent): then
 * re-emit it with the same event id so consumers can drop the duplicate.
 */
export class PublishFailedError extends Error {
  override readonly name = 'PublishFailedError';
  constructor(
    message: string,
    /** Stream the entry was meant for. */
    readonly stream: string,
    /** False when Redis surely did not store it. */
    readonly maybeStored: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
