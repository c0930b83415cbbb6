import type { Cluster, Redis } from 'ioredis';
import { scheduleKeysOf } from '../keys/index.js';
import { LeanScript } from '../redis/lean-script.js';
import { CANCEL_SCHEDULED, LIST_SCHEDULED, MOVE_DUE, RESCHEDULE_IF_OWNED, SCHEDULE_ENTRY } from '../redis/lua/schedule.js';

type Connection = Redis | Cluster;

const SCHEDULE = new LeanScript<number>(SCHEDULE_ENTRY, 2);
const MOVE = new LeanScript<[moved: number, nextDue: number]>(MOVE_DUE, 3);
const CANCEL = new LeanScript<number>(CANCEL_SCHEDULED, 2);
const LIST = new LeanScript<[number, number, number, Array<[string, string, string[]]>]>(LIST_SCHEDULED, 2);
const RESCHEDULE = new LeanScript<string | null | 0>(RESCHEDULE_IF_OWNED, 3);

/** One entry waiting in a schedule. */
export interface ScheduledEntry {
  readonly eventId: string;
  /** When it is due (ms since epoch). */
  readonly dueAt: number;
  /** Its envelope fields (name, value...), as it will be added. */
  readonly fields: string[];
}

/** What a stream's schedule holds. */
export interface ScheduleSummary {
  readonly stream: string;
  /** Entries scheduled. */
  readonly count: number;
  /** Due time of the first entry (ms since epoch), null when none is scheduled. */
  readonly nextDueAt: number | null;
  /** How long the first entry is past its due time (ms), 0 when none is: a mover that does not run. */
  readonly oldestOverdueMs: number;
  /** The first entries by due time (at most the limit asked for). */
  readonly entries: ScheduledEntry[];
}

/**
 * Holds an entry in `stream`'s schedule until `dueAt`. The same event id scheduled again replaces
 * the one held (a retried emit schedules one entry). `head` is the XADD arguments before the fields.
 */
export async function scheduleEntry(
  redis: Connection,
  stream: string,
  eventId: string,
  dueAt: number,
  idmpProducer: string,
  head: ReadonlyArray<string | number>,
  fields: readonly string[],
): Promise<boolean> {
  const { due, entries } = scheduleKeysOf(stream);
  const added = await SCHEDULE.run(redis, [due, entries, eventId, dueAt, idmpProducer, head.length, ...head, ...fields]);
  return Number(added) === 1;
}

/** Moves up to `limit` due entries of `stream`'s schedule into it; see lua/schedule.ts MOVE_DUE. */
export async function moveDue(
  redis: Connection,
  stream: string,
  limit: number,
  idmp: boolean,
): Promise<{ moved: number; nextDueAt: number | null }> {
  const { due, entries } = scheduleKeysOf(stream);
  const [moved, next] = await MOVE.run(redis, [due, entries, stream, limit, idmp ? '1' : '0']);
  return { moved: Number(moved), nextDueAt: Number(next) < 0 ? null : Number(next) };
}

/** Removes a scheduled entry; false when none with this event id was scheduled (or it was moved already). */
export async function cancelScheduled(redis: Connection, stream: string, eventId: string): Promise<boolean> {
  const { due, entries } = scheduleKeysOf(stream);
  return Number(await CANCEL.run(redis, [due, entries, eventId])) === 1;
}

/** What `stream`'s schedule holds, with its first `limit` entries. */
export async function summarizeSchedule(
  redis: Connection,
  stream: string,
  limit = 20,
  now = Date.now(),
): Promise<ScheduleSummary> {
  const { due, entries } = scheduleKeysOf(stream);
  const [count, first, overdue, listed] = await LIST.run(redis, [due, entries, now, Math.max(0, Math.floor(limit))]);
  return {
    stream,
    count: Number(count),
    nextDueAt: Number(first) < 0 ? null : Number(first),
    oldestOverdueMs: Number(overdue) < 0 ? 0 : now - Number(overdue),
    entries: listed.map(([eventId, dueAt, fields]) => ({ eventId, dueAt: Number(dueAt), fields })),
  };
}

/**
 * Schedules a copy of a pending entry for `dueAt`, for `group` alone, and acks it, only while
 * `consumer` owns it (see lua/schedule.ts RESCHEDULE_IF_OWNED): the event id it went under, null
 * when not owned, 0 when its payload was trimmed away.
 */
export async function rescheduleIfOwned(
  redis: Connection,
  target: { stream: string; group: string; consumer: string },
  id: string,
  dueAt: number,
  fieldNames: { eventId: string; targetGroup: string },
): Promise<string | null | 0> {
  const { stream, group, consumer } = target;
  const { due, entries } = scheduleKeysOf(stream);
  const args = [stream, due, entries, group, consumer, id, dueAt, fieldNames.eventId, fieldNames.targetGroup];
  const answer = await RESCHEDULE.run(redis, args);
  return answer === 0 ? 0 : (answer ?? null);
}
