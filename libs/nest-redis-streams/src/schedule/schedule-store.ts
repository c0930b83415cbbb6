import type { Cluster, Redis } from 'ioredis';
import { ENVELOPE } from '../constants.js';
import { scheduleKeysOf } from '../keys/index.js';
import { LeanScript } from '../redis/lean-script.js';
import { CANCEL_SCHEDULED, LIST_SCHEDULED, MOVE_DUE, RESCHEDULE_IF_OWNED, SCHEDULE_ENTRY } from '../redis/lua/schedule.js';

type Connection = Redis | Cluster;
type Row = [member: string, score: string, fields: string[], problem: string];

const SCHEDULE = new LeanScript<[added: number, due: number]>(SCHEDULE_ENTRY, 2);
const MOVE = new LeanScript<[moved: number, looked: number, now: number, next: string, aside: string[]]>(MOVE_DUE, 3);
const CANCEL = new LeanScript<string | null>(CANCEL_SCHEDULED, 2);
const LIST = new LeanScript<[number, number, string, Row[], number, Array<[string, string]>]>(LIST_SCHEDULED, 2);
const RESCHEDULE = new LeanScript<string | null | 0>(RESCHEDULE_IF_OWNED, 3);

/**
 * When a scheduled entry is due: ms since epoch (the caller's own time: `deliverAt`, a RetryLater
 * Date), or `{ inMs }`, a delay counted from Redis' clock by the script that stores it, so that a
 * producer whose clock is off still delays by what it asked.
 */
export type DueTime = number | { readonly inMs: number };

/** One entry waiting in a schedule. */
export interface ScheduledEntry {
  /**
   * Its member in the schedule, which cancelling takes: the event id of a delayed emit (one that
   * starts with `nrs:` has `nrs:emit:` before it), `nrs:retry:<entry id>:<group>` for the copy of a
   * long RetryLater (one per entry and group).
   */
  readonly member: string;
  /** The event id it carries (its `event_id` field), null when it has none. */
  readonly eventId: string | null;
  /** The one group it is for (a RetryLater's copy: its `nrs:group` field), null for every group. */
  readonly group: string | null;
  /** When it is due (ms since epoch); NaN for a record whose score is no time a Date holds (malformed). */
  readonly dueAt: number;
  /** Its envelope fields (name, value...), as it will be added; empty for a malformed record. */
  readonly fields: string[];
  /**
   * Set when the record is not an entry this library wrote (by hand, or damaged): what is wrong.
   * A mover sets it aside when it comes due (see ScheduleSummary.malformed); it is never added.
   */
  readonly malformed?: string;
}

/** A record of a schedule that a mover set aside: it held no valid entry (see ScheduledEntry.malformed). */
export interface MalformedScheduleRecord {
  readonly member: string;
  readonly problem: string;
}

/** What a stream's schedule holds. */
export interface ScheduleSummary {
  readonly stream: string;
  /** Members in the schedule (the records set aside included). */
  readonly count: number;
  /** Due time of the first entry (ms since epoch), null when none is scheduled. */
  readonly nextDueAt: number | null;
  /** How long the first entry is past its due time (ms), 0 when none is: a mover that does not run. */
  readonly oldestOverdueMs: number;
  /** Redis' clock when the schedule was read (ms since epoch): due times are on it. */
  readonly serverTime: number;
  /** The first entries by due time (at most the limit asked for), records set aside left out. */
  readonly entries: ScheduledEntry[];
  /**
   * Records a mover set aside because they hold no valid entry (hand-written or damaged): never
   * due, never added, kept for an operator to read (`HGET` of the schedule hash) and remove
   * (cancel by member). `count` of them and the first (at most the limit asked for).
   */
  readonly malformed: { readonly count: number; readonly records: MalformedScheduleRecord[] };
}

/** What one round of a mover did; see lua/schedule.ts MOVE_DUE. */
export interface MoveRound {
  readonly moved: number;
  /** Members looked at: moved and set aside. */
  readonly looked: number;
  /** Due time of the first member left (ms since epoch), null when none is left or only records set aside. */
  readonly nextDueAt: number | null;
  /** How long until then on Redis' clock (ms, 0 when due), null with nextDueAt. */
  readonly nextDueInMs: number | null;
  /** Members set aside in this round (no valid entry under them). */
  readonly setAside: string[];
}

/**
 * Holds an entry in `stream`'s schedule under `member` (eventMember) until `due`. The same member
 * scheduled again replaces the one held. `head` is the XADD arguments before the fields.
 * Resolves with whether it was new, and its due time on Redis' clock.
 */
export async function scheduleEntry(
  redis: Connection,
  stream: string,
  member: string,
  due: DueTime,
  idmpProducer: string,
  head: ReadonlyArray<string | number>,
  fields: readonly string[],
): Promise<{ added: boolean; dueAt: number }> {
  const { due: dueKey, entries } = scheduleKeysOf(stream);
  const [time, mode] = typeof due === 'number' ? [due, 'at'] : [due.inMs, 'in'];
  const args = [dueKey, entries, member, time, mode, idmpProducer, head.length, ...head, ...fields];
  const [added, dueAt] = await SCHEDULE.run(redis, args);
  return { added: Number(added) === 1, dueAt: Number(dueAt) };
}

/** Moves up to `limit` due entries of `stream`'s schedule into it; see lua/schedule.ts MOVE_DUE. */
export async function moveDue(redis: Connection, stream: string, limit: number, idmp: boolean): Promise<MoveRound> {
  const { due, entries } = scheduleKeysOf(stream);
  const [moved, looked, now, next, setAside] = await MOVE.run(redis, [due, entries, stream, limit, idmp ? '1' : '0']);
  const nextDueAt = timeOf(next);
  const nextDueInMs = nextDueAt === null ? null : Math.max(0, nextDueAt - Number(now));
  return { moved: Number(moved), looked: Number(looked), nextDueAt, nextDueInMs, setAside };
}

/**
 * Removes the first of `members` that is scheduled (an entry, or a record set aside). Resolves
 * with the member removed, null when none was scheduled (or it was moved already).
 */
export async function cancelScheduled(redis: Connection, stream: string, members: readonly string[]): Promise<string | null> {
  const { due, entries } = scheduleKeysOf(stream);
  return (await CANCEL.run(redis, [due, entries, ...members])) ?? null;
}

/** What `stream`'s schedule holds, with its first `limit` entries and records set aside. */
export async function summarizeSchedule(redis: Connection, stream: string, limit = 20): Promise<ScheduleSummary> {
  const { due, entries } = scheduleKeysOf(stream);
  const [count, now, first, listed, asideCount, aside] = await LIST.run(redis, [due, entries, Math.max(0, Math.floor(limit))]);
  const serverTime = Number(now);
  const nextDueAt = timeOf(first);
  return {
    stream,
    count: Number(count),
    nextDueAt,
    oldestOverdueMs: nextDueAt !== null && nextDueAt <= serverTime ? serverTime - nextDueAt : 0,
    serverTime,
    entries: listed.map(scheduledEntryOf),
    malformed: { count: Number(asideCount), records: aside.map(([member, problem]) => ({ member, problem })) },
  };
}

/**
 * Schedules a copy of a pending entry for `due`, for `group` alone, and acks it, only while
 * `consumer` owns it (see lua/schedule.ts RESCHEDULE_IF_OWNED): the member it went under, null
 * when not owned, 0 when its payload was trimmed away.
 */
export async function rescheduleIfOwned(
  redis: Connection,
  target: { stream: string; group: string; consumer: string },
  id: string,
  due: DueTime,
  fieldNames: { targetGroup: string },
): Promise<string | null | 0> {
  const { stream, group, consumer } = target;
  const { due: dueKey, entries } = scheduleKeysOf(stream);
  const [time, mode] = typeof due === 'number' ? [due, 'at'] : [due.inMs, 'in'];
  const args = [stream, dueKey, entries, group, consumer, id, time, mode, fieldNames.targetGroup];
  const answer = await RESCHEDULE.run(redis, args);
  return answer === 0 ? 0 : (answer ?? null);
}

/** A score as a due time: null for none ('') and for one no Date holds (a record written by hand: +inf, 1e300). */
function timeOf(score: string): number | null {
  const time = Number(score);
  return score !== '' && Number.isFinite(time) && Math.abs(time) <= MAX_DATE_MS ? time : null;
}

/** The largest time a Date holds (ms from the epoch either way). */
const MAX_DATE_MS = 8.64e15;

function scheduledEntryOf([member, score, fields, problem]: Row): ScheduledEntry {
  const dueAt = timeOf(score);
  const fieldValue = (name: string) => {
    for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
    return null;
  };
  const malformed = problem !== '' ? problem : dueAt === null ? `its due time (score ${score}) is not a time` : undefined;
  return {
    member,
    eventId: fieldValue(ENVELOPE.eventId),
    group: fieldValue(ENVELOPE.targetGroup),
    dueAt: dueAt ?? Number.NaN,
    fields,
    ...(malformed === undefined ? {} : { malformed }),
  };
}
