import { CLIENT_MESSAGES } from './client.messages.js';
import { EmitBatchError, type EmitBatchFailure } from './errors/emit-batch.error.js';

/** Failures named in the message; the rest are counted (all of them are in `error.failures`). */
const NAMED = 3;

/**
 * The error of a batch some entries of which failed: `notEncoded` before anything was written,
 * `notStored` after Redis answered (or the connection failed) for each entry.
 */
export function batchError(
  stream: string,
  ids: ReadonlyArray<string | undefined>,
  failures: readonly EmitBatchFailure[],
  kind: 'notEncoded' | 'notStored',
): EmitBatchError {
  const message = kind === 'notEncoded' ? CLIENT_MESSAGES.batchNotEncoded : CLIENT_MESSAGES.batchNotStored;
  return new EmitBatchError(message(stream, failures.length, ids.length, listOf(failures)), stream, ids, failures);
}

/** `#2 (PayloadTooLargeError: ...); #7 (...); and 4 more`, or one sentence when all share one error. */
function listOf(failures: readonly EmitBatchFailure[]): string {
  const first = failures[0].error;
  if (failures.length > 1 && failures.every(({ error }) => error === first)) {
    return `all ${failures.length} for the same reason (${first.name}: ${first.message})`;
  }
  const named = failures.slice(0, NAMED).map(({ index, error }) => `#${index} (${error.name}: ${error.message})`);
  const more = failures.length - named.length;
  return named.join('; ') + (more > 0 ? `; and ${more} more` : '');
}

/** A short description of a value for a message: its type, and its start for a string. */
export function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'no prototype'})`;
  return `${typeof value} ${String(value)}`;
}
