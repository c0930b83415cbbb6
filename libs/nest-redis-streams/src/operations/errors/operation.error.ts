/**
 * Why an operation was refused; the console maps it to an HTTP status, the CLI to an exit code.
 * `unavailable`: the audit stream could not record the action's intent, so it was not run.
 * `conflict`: what the action was about changed while it ran (a consumer or another operator acted
 * on the same entry first, e.g. it is no longer pending); the message says what became of it.
 */
export type OperationErrorKind = 'bad-request' | 'not-found' | 'refused' | 'conflict' | 'unavailable';

/**
 * An operator's request that cannot be carried out as asked: bad input, a stream/group/entry that
 * does not exist, an action refused because it would lose work (the message says the way out), or
 * an action that could not be audited. Whatever the kind, nothing was changed.
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
