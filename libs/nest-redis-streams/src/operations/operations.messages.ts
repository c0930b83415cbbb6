import { timeText } from './time-text.js';

/** A time in a sentence: an ISO date when a Date can hold it, else "<ms> ms since the epoch". */
export function timePhrase(ms: number): string {
  const text = timeText(ms);
  return text.includes(':') ? text : `${text} ms since the epoch`;
}

/** Messages of the operations layer: full sentences that name the value and the way out. */
export const OPERATIONS_MESSAGES = {
  noGroup: (stream: string, group: string) => `Stream "${stream}" has no consumer group "${group}".`,
  notScheduled: (stream: string, eventId: string) =>
    `Stream "${stream}" has no scheduled entry with event id "${eventId}" (never scheduled, cancelled, or already ` +
    'moved into the stream: look for it there).',
  keyNotBlocked: (stream: string, group: string, key: string) =>
    `Ordering key "${key}" is not blocked in group "${group}" of stream "${stream}" (never blocked, or released ` +
    'already). List the blocked keys to find it; for a partitioned stream give the partition stream.',
  keyBusy: (stream: string, group: string, key: string, state: string) =>
    `Ordering key "${key}" of group "${group}" on stream "${stream}" is ${state}: ` +
    (state === 'failing' ? 'its blocking entry is still being retried' : 'a released entry of it is running') +
    ', and releasing it now would run the next entry beside that one, out of order. Wait until it is parked ' +
    '(list the blocked keys), or pass { force: true } if that entry is known to be gone.',
  releaseNeedsGroup: (stream: string, key: string) =>
    `Releasing ordering key "${key}" of stream "${stream}" needs the group whose key it is: pass { group }.`,
  noEntry: (stream: string, id: string) => `Stream "${stream}" has no entry ${id} (never written, trimmed or deleted).`,
  notPending: (stream: string, group: string, id: string) =>
    `Entry ${id} is not pending in group "${group}" of stream "${stream}" (already acknowledged, or never delivered).`,
  badId: (what: string, value: string) =>
    `${what} must be a stream id like 1700000000000-0 (or a millisecond time), got "${value}".`,
  idOutOfRange: (what: string, value: string, max: string) =>
    `${what} "${value}" is out of range: both parts of a stream id (<ms>-<seq>) are at most ${max}.`,
  cursorPastEnd: (stream: string, group: string, to: string, lastId: string, until: number) =>
    `Moving the cursor of group "${group}" (stream "${stream}") to ${to} puts it past the stream's last entry ${lastId}: ` +
    `every entry added before ${timePhrase(until)} would be skipped, never delivered. Pick an id or time up to ` +
    'the last entry (or the end), or force it.',
  badTime: (value: string) =>
    `A time must be milliseconds since the epoch or an ISO date (2024-05-01T12:00:00Z), got "${value}".`,
  badName: (what: string, value: unknown) => `${what} must be a non-empty string, got ${JSON.stringify(value)}.`,
  badCount: (what: string, value: unknown, max: number) =>
    `${what} must be an integer from 1 to ${max}, got ${JSON.stringify(value)}.`,
  activeConsumers: (stream: string, group: string, names: string[]) =>
    `Group "${group}" of stream "${stream}" has active consumers (${names.join(', ')}): moving its cursor under them ` +
    'races their reads. Stop them first, or force it.',
  consumerHolds: (stream: string, group: string, consumer: string, pending: number) =>
    `Consumer "${consumer}" of group "${group}" (stream "${stream}") holds ${pending} pending entries: deleting it would ` +
    'drop the only record of them. Hand them to another consumer first (hand-over), then delete it.',
  noConsumer: (stream: string, group: string, consumer: string) =>
    `Group "${group}" of stream "${stream}" has no consumer "${consumer}".`,
  sameConsumer: (consumer: string) => `Hand-over needs another consumer than "${consumer}" to receive the entries.`,
  tombstone: (id: string, reason: string) =>
    `Dead letter ${id} is a tombstone (${reason}): it has no payload to re-drive. Discard it instead.`,
  badFingerprint: (value: string) =>
    `A failure group is named by its fingerprint, 12 hex digits like 3f9a0c2b7d1e, got ${JSON.stringify(value)}. ` +
    "List the groups (dlq groups <stream>, or the console's dead-letter page) to find it.",
  noSuchCause: (dlq: string, cause: string, scanned: number, complete: boolean) =>
    `Dead-letter stream "${dlq}" has no records of failure group ${cause} ` +
    (complete ? `(all ${scanned} read)` : `among the ${scanned} oldest read (the scan limit)`) +
    ': it was re-driven or discarded already, or the fingerprint is from another stream. List the groups to find it.',
  badKeyField: (value: unknown) =>
    `The ordering-key field must be a payload field name of 1 to 200 characters, got ${JSON.stringify(value)}.`,
  badCanaryOption: (name: string, value: unknown, limit: { min: number; max: number; integer: boolean }) =>
    `${name} must be ${limit.integer ? 'a whole number' : 'a number'} from ${limit.min} to ${limit.max}, ` +
    `got ${JSON.stringify(value)}.`,
  noCanaryRun: (runId: string) => `There is no canary re-drive run "${runId}" (unknown, or older than its 7 days).`,
  noDeadLetter: (dlq: string, id: string) => `Dead-letter stream "${dlq}" has no entry ${id} (already re-driven or discarded).`,
  parkedByOperator: (actor: string) => `Sent to the dead-letter stream by an operator (${actor}).`,
  auditRefused: (action: string, stream: string, audit: string, reason: string) =>
    `Nothing was done: audit stream "${audit}" refused the record of ${action} on stream "${stream}" (${reason}). An ` +
    'action that cannot be audited does not run; free memory in Redis (or raise maxmemory) and try again.',
  auditIncomplete: (action: string, stream: string, what: string, audit: string, intentId: string, reason: string) =>
    `${action} on stream "${stream}" ${what}, but its outcome could not be recorded in audit stream "${audit}" ` +
    `(${reason}): record ${intentId} shows it as started. Check the stream before repeating it.`,
  notServed: (stream: string) =>
    `Stream "${stream}" is not one the console serves: without a configured stream list it serves the streams that ` +
    'have consumer groups (as the overview lists them). Add it to streams to serve it.',
  notAStream: (key: string, type: string) =>
    type === 'none' ? `Key "${key}" does not exist.` : `Key "${key}" holds a ${type}, not a stream.`,
  badPartitions: (value: unknown, max: number) =>
    `partitions must be a whole number from 1 to ${max}, got ${JSON.stringify(String(value))}.`,
};
