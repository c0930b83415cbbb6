import { timePhrase } from '../time-text.js';

/** Messages of the operations layer: full sentences that name the value and the way out. */
export const OPERATIONS_MESSAGES = {
  noGroup: (stream: string, group: string) => `Stream "${stream}" has no consumer group "${group}".`,
  notScheduled: (stream: string, member: string) =>
    `Stream "${stream}" has no scheduled entry with event id or member "${member}" (never scheduled, cancelled, or ` +
    'already moved into the stream: look for it there; `scheduled` lists the members).',
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
  changedMeanwhile: (action: string, stream: string, group: string, id: string, fate: string) =>
    `Entry ${id} of group "${group}" (stream "${stream}") changed while the ${action} ran, so it was not done: ${fate}. ` +
    'Look at the entry again (its history shows where it went) before acting on it.',
  claimOfTrimmed: (stream: string, group: string, id: string, owner: string) =>
    `Entry ${id} of group "${group}" (stream "${stream}") was not claimed: its payload is gone from the stream ` +
    `(trimmed or deleted) and a claim would drop it from the pending list without a trace. It stays pending with ` +
    `"${owner}"; send it to the dead-letter stream instead (park): it becomes a payload-trimmed tombstone.`,
  trimmedAtHandOver: (from: string, to: string) =>
    `Its payload was trimmed away while it was pending with "${from}"; found by a hand-over to "${to}".`,
  ownerKeptChanging: (action: string, stream: string, group: string, id: string, tries: number) =>
    `Entry ${id} of group "${group}" (stream "${stream}") changed owner ${tries} times while the ${action} ran ` +
    '(consumers keep reclaiming it), so it was not done. Try again, or stop the consumers first.',
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
  consumerAlive: (stream: string, group: string, consumer: string, leftMs: number) =>
    `Consumer "${consumer}" of group "${group}" (stream "${stream}") is alive: its instance's heartbeat holds for ` +
    `${Math.ceil(leftMs / 1000)} s more. A running consumer would come back at its next read; stop its instance ` +
    'first, then delete it once the heartbeat has run out.',
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
  canaryRunning: (stream: string, cause: string, runId: string, leaseLeftMs: number) =>
    `A canary of failure group ${cause} on stream "${stream}" is running already: run ${runId} ` +
    `(its lease, renewed every second while it runs, ends in ${Math.ceil(leaseLeftMs / 1000)} s if its process stopped). ` +
    'One canary per stream and failure group at a time: watch that run instead.',
  canaryAborted: (since: number, leaseMs: number) =>
    `No heartbeat since ${timePhrase(since)}: the process running it stopped, or Redis refused its ` +
    `writes (full, loading or unreachable) for more than ${leaseMs / 1000} s. Run the same canary again to go on: ` +
    'it takes over once the lease lapsed, reading up to the same dead letter, so nothing is re-driven twice.',
  canaryTakenOver: (runId: string, since: number) =>
    `Aborted: no heartbeat since ${timePhrase(since)} (its process stopped, or could not reach Redis); ` +
    `run ${runId} took over, reading up to the same dead letter.`,
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
  scheduleKeyType: (stream: string, key: string, type: string, expected: string) =>
    `The schedule of stream "${stream}" cannot be read: key "${key}" holds a ${type}, where this library keeps a ` +
    `${expected}. It was not written by nest-redis-streams: rename or delete it (its delayed entries, if any, are lost with it).`,
  badPartitions: (value: unknown, max: number) =>
    `partitions must be a whole number from 1 to ${max}, got ${JSON.stringify(String(value))}.`,
};
