import { canWrite, get, loadSession, post } from './api.js';
import { duration, h, ident, table, when } from './dom.js';
import { payload } from './payload.js';
import { act } from './notice.js';

interface Scheduled {
  member: string;
  eventId: string | null;
  group: string | null;
  dueAt: number | null;
  fields: Array<[string, string]> | null;
  malformed?: string;
}
interface Schedule {
  stream: string;
  count: number;
  nextDueAt: number | null;
  oldestOverdueMs: number;
  serverTime: number;
  entries: Scheduled[];
  malformed: { count: number; records: Array<{ member: string; problem: string }> };
}

/** A stream's schedule: delayed entries waiting for their time, each cancellable; overdue ones stand out. */
export async function scheduledView(params: URLSearchParams, rerender: () => Promise<void>): Promise<HTMLElement> {
  const stream = params.get('stream') ?? '';
  const session = await loadSession();
  const writable = canWrite(session, stream);
  const schedule = await get<Schedule>('scheduled', { stream });
  // Due times are on Redis' clock; this browser's may differ.
  const now = schedule.serverTime;
  const cancel = (member: string) =>
    writable
      ? h(
          'button',
          {
            class: 'danger',
            'data-test': 'cancel-scheduled',
            onclick: () =>
              confirm(`Cancel scheduled entry ${member}?`) &&
              void act(`Cancel ${member}`, () => post('scheduled/cancel', { stream, member }), rerender),
          },
          'cancel',
        )
      : '';
  const rows = schedule.entries.map((e) => [
    ident(e.member),
    e.group === null ? 'all' : ident(e.group),
    e.dueAt === null ? '-' : ident(when(e.dueAt)),
    e.malformed !== undefined || e.dueAt === null
      ? h('span', { class: 'loss' }, 'never (malformed)')
      : e.dueAt <= now
        ? h('span', { class: 'loss' }, `overdue ${duration(now - e.dueAt)}`)
        : `in ${duration(e.dueAt - now)}`,
    e.malformed !== undefined ? h('span', { class: 'loss', 'data-test': 'malformed' }, e.malformed) : payload(e.fields),
    cancel(e.member),
  ]);
  const aside = schedule.malformed.records.map((r) => [
    ident(r.member),
    h('span', { class: 'loss', 'data-test': 'malformed' }, r.problem),
    cancel(r.member),
  ]);
  const overdue = schedule.oldestOverdueMs;
  return h(
    'div',
    { 'data-test': 'scheduled' },
    h(
      'section',
      { class: 'card' },
      h('h2', {}, `Scheduled entries of ${stream}`),
      h(
        'p',
        { 'data-test': 'schedule-summary' },
        `${schedule.count} scheduled; next due ${schedule.nextDueAt === null ? 'none' : when(schedule.nextDueAt)}. `,
        overdue > 0
          ? h(
              'span',
              { class: 'loss' },
              `Oldest overdue by ${duration(overdue)}: no server moves this schedule (is one running with scheduleCheckMs > 0?).`,
            )
          : 'Nothing overdue.',
      ),
      table(['member', 'group', 'due at', 'when', 'payload', ''], rows),
    ),
    schedule.malformed.count > 0
      ? h(
          'section',
          { class: 'card', 'data-test': 'schedule-set-aside' },
          h('h2', {}, `Set aside: ${schedule.malformed.count} malformed record(s)`),
          h(
            'p',
            {},
            'Records that hold no entry this library wrote (written by hand, or damaged): never added to the stream. ' +
              'Read one with HGET on the schedule hash; cancel removes it.',
          ),
          table(['member', 'problem', ''], aside),
        )
      : '',
  );
}
