import { DeadLetterReason } from '../dead-letter-reason.js';

/** A stream entry whose fields cannot be turned into handler data. It is dead-lettered at once. */
export class UndecodableEntryError extends Error {
  override readonly name: string = 'UndecodableEntryError';
  /** The `dlq:reason` it is parked with. */
  readonly reason: DeadLetterReason = DeadLetterReason.UNDECODABLE;
}
