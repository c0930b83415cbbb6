/**
 * A write ran (or may have run in part) but its outcome could not be appended to the audit stream:
 * the stream keeps its intent (state `started`). The message says what was done; do not repeat it
 * before looking.
 */
export class AuditIncompleteError extends Error {
  override name = 'AuditIncompleteError';

  constructor(
    message: string,
    /** The action's own result when it succeeded; undefined when it failed. */
    readonly result: unknown,
    /** Id of the intent record that stays in the audit stream. */
    readonly intentId: string,
  ) {
    super(message);
  }
}
