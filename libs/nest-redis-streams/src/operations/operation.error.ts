/** Why an operation was refused; the console maps it to an HTTP status, the CLI to an exit code. */
export type OperationErrorKind = 'bad-request' | 'not-found' | 'refused';

/**
 * An operator's request that cannot be carried out as asked: bad input, a stream/group/entry that
 * does not exist, or an action refused because it would lose work (the message says the way out).
 */
export class OperationError extends Error {
  override name = 'OperationError';

  constructor(
    readonly kind: OperationErrorKind,
    message: string,
  ) {
    super(message);
  }
}
