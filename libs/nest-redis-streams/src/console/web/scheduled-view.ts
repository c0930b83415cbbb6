import { canWrite, get, loadSession, post } from './api.js';
import { duration, h, ident, table, when } from './dom.js';
import { payload } from './payload.js';
import { act } from './notice.js';

interface Scheduled {
  eventId: string;
  dueAt: number;
  fields: Array<[string, string]> | null;
}
interface Schedule {
  stream: string;
  count: number;
  nextDueAt: number | null;
  oldestOverdueMs: number;
  entries: Scheduled[];
}

/** A stream's schedule: delayed entries waiting for their time, each cancellable; overdue ones stand out. */
export async function scheduledView(params: URLSearchParams, rerender: () => Promise<void>): Promise<HTMLElement> {
  const stream = params.get('stream') ?? '';
  const session = await loadSession();
  const writable = canWrite(session, stream);
  const schedule = await get<Schedule>('scheduled', { stream });
  const now = Date.now();
  const rows = schedule.entries.map((e) => [
    ident(e.eventId),
    ident(when(e.dueAt)),
    e.dueAt <= now ? h('span', { class: 'loss' }, `overdue ${duration(now - e.dueAt)}`) : `in ${duration(e.dueAt - now)}`,
    payload(e.fields),
    writable
      ? h(
          'button',
          {
            class: 'danger',
            'data-test': 'cancel-scheduled',
            onclick: () =>
              confirm(`Cancel scheduled entry ${e.eventId}?`) &&
              void act(`Cancel ${e.eventId}`, () => post('scheduled/cancel', { stream, eventId: e.eventId }), rerender),
          },
          'cancel',
        )
      : '',
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
      table(['event id', 'due at', 'when', 'payload', ''], rows),
    ),
  );
}
