import { OperationError } from './operation.error.js';

/** A canary of the same stream and failure group is live: refused, naming the run to watch instead. */
export class CanaryRunningError extends OperationError {
  override name = 'CanaryRunningError';

  constructor(
    message: string,
    /** The live run's id (its progress: `canaries.progress(runId)`). */
    readonly runId: string,
  ) {
    super('refused', message);
  }
}
