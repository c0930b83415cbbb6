import { hasHashTag, keyBeside } from './slots.js';

/** The two keys of a stream's schedule (delayed entries waiting for their time). */
export interface ScheduleKeys {
  /** Sorted set: member (eventMember, retryMember) → due time (ms since epoch). */
  readonly due: string;
  /** Hash: member → the packed entry (XADD head and envelope fields). */
  readonly entries: string;
}

/**
 * The schedule of `stream`: `{orders}:schedule` and `{orders}:schedule:entries` (a stream with its
 * own hash tag keeps it: `orders:{orders:3}:schedule`). Always in the stream's hash slot, cluster
 * or not, so the mover's script (read the schedule, XADD, remove) touches one slot, and every
 * producer and server agrees on the names without knowing the topology.
 */
export function scheduleKeysOf(stream: string): ScheduleKeys {
  return { due: besideStream(stream, 'schedule'), entries: besideStream(stream, 'schedule:entries') };
}

/**
 * Like keyBeside, but a name with a stray `{` (no tag) keeps it inside the new tag, which then
 * hashes exactly like the name. Only a name with a `}` and no tag cannot be tagged like itself.
 */
function besideStream(stream: string, suffix: string): string {
  if (hasHashTag(stream) || stream.includes('}')) return keyBeside(stream, suffix);
  return `{${stream}}:${suffix}`;
}

/** Prefix of the schedule members this library names itself; an event id with it is kept apart (see eventMember). */
const OWN_MEMBER = 'nrs:';
/** The move script strips it again for XADD … IDMP (redis/lua/schedule.ts). */
const ESCAPED_EVENT_MEMBER = 'nrs:emit:';

/**
 * The schedule member of a delayed emit: its event id, so that the same event id scheduled again
 * replaces the entry held (a retried emit schedules one entry). An event id that starts with `nrs:`
 * gets `nrs:emit:` before it, so no event id can equal a RetryLater copy's member (retryMember).
 */
export function eventMember(eventId: string): string {
  return eventId.startsWith(OWN_MEMBER) ? `${ESCAPED_EVENT_MEMBER}${eventId}` : eventId;
}

/**
 * The schedule member of a long RetryLater's copy of entry `entryId` for `group`:
 * `nrs:retry:<entry id>:<group>`, one per entry and group, so that two groups retrying one entry
 * each keep their copy. Built by the reschedule script (redis/lua/schedule.ts); here to read it.
 */
export function retryMember(entryId: string, group: string): string {
  return `nrs:retry:${entryId}:${group}`;
}
