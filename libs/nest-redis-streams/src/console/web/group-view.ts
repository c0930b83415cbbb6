import { canWrite, get, loadSession, post } from './api.js';
import { blockedKeysCard } from './blocked-keys-view.js';
import { type Series, chart } from './charts.js';
import { duration, h, ident, table, when } from './dom.js';
import { type Pairs, payload } from './payload.js';
import { searchPanel } from './search-panel.js';
import { type Stream, badges } from './overview-view.js';
import { act, notify } from './notice.js';
import { ownershipCard } from './ownership-card.js';

interface Pending {
  id: string;
  time: number;
  consumer: string;
  idleMs: number;
  lastDeliveryAt: number;
  /** Waiting for a retry's back-off: when it is due (null: not waiting). */
  retryAt: number | null;
  deliveries: number;
  publishedAt: number | null;
  lastError: { at: number; consumer: string; deliveries: number; errorClass: string; message: string } | null;
  fields: Pairs | null;
}

/** The group's own figures and badges, from the overview (one shared read). */
function groupFigures(streams: Stream[], stream: string, group: string): HTMLElement {
  const g = streams.find((s) => s.stream === stream)?.groups.find((x) => x.group === group);
  if (!g) return h('p', { class: 'muted' }, 'This group is not in the overview.');
  const figure = (label: string, value: string | number) => h('div', {}, h('b', {}, String(value)), h('span', {}, label));
  return h(
    'div',
    { 'data-test': 'group-figures' },
    h(
      'div',
      { class: 'figures' },
      figure('pending', g.pending),
      figure('oldest idle', duration(g.oldestIdleMs)),
      figure('lag', g.lag === null ? 'unknown' : g.lag),
      figure('dead letters', g.groupDeadLetters ?? `${g.deadLetters} (all groups)`),
      figure('consumers', g.consumers),
    ),
    badges(g),
  );
}

/** The last handler failure of a pending entry: when, where, which delivery, what. */
function lastError(e: Pending): HTMLElement | string {
  if (!e.lastError) return '';
  const err = e.lastError;
  return h(
    'span',
    { class: 'error-text wide', title: `${when(err.at)} at ${err.consumer}, delivery ${err.deliveries}` },
    `${err.errorClass ? `${err.errorClass}: ` : ''}${err.message}`,
    h('small', { class: 'muted' }, ` (${when(err.at)}, delivery ${err.deliveries})`),
  );
}
/** When a pending entry was last delivered (or failed), and when its retry is due while it waits for one. */
function lastDelivery(e: Pending): HTMLElement {
  const idle = `idle ${duration(e.idleMs)}`;
  if (e.retryAt === null) return h('span', { title: idle }, ident(when(e.lastDeliveryAt)));
  return h(
    'span',
    { title: `${idle}; its handler failed and the retry waits out its back-off` },
    ident(when(e.lastDeliveryAt)),
    h('small', { class: 'muted' }, ` (retry at ${when(e.retryAt)})`),
  );
}

interface Consumer {
  name: string;
  pending: number;
  idleMs: number;
  active: boolean;
  liveness: 'heartbeat' | 'server' | 'idle';
  heartbeatLeftMs: number | null;
  holds: string[];
}

/** A consumer's state and what it was judged by: the library's heartbeat, Redis 7.2+'s idle, or older Redis' idle. */
function consumerState(c: Consumer): HTMLElement {
  if (c.liveness === 'heartbeat')
    return h(
      'span',
      { title: `heartbeat renewed by the instance, ${duration(c.heartbeatLeftMs ?? 0)} left` },
      'active · heartbeat',
    );
  if (c.liveness === 'server')
    return h(
      'span',
      { title: 'Redis 7.2+: idle counts every read attempt, blocked ones too' },
      `${c.active ? 'active' : 'idle'} · server`,
    );
  return h(
    'span',
    { title: 'Redis < 7.2 counts only reads that returned entries: a healthy consumer of a quiet stream looks idle' },
    c.active ? 'active · idle time' : 'quiet or gone · idle time (Redis < 7.2)',
  );
}
interface Preview {
  from: string;
  to: string;
  effect: string;
  entries: number;
  capped: boolean;
  pending: number;
  activeConsumers: string[];
  lastId: string;
  pastEnd: boolean;
}

const toMs = (local: string) => (local ? String(new Date(local).getTime()) : undefined);

/** A group: its consumers, its PEL (paged, by time or id) with per-entry actions, and its cursor. */
export async function groupView(params: URLSearchParams, rerender: () => Promise<void>): Promise<HTMLElement> {
  const stream = params.get('stream') ?? '';
  const group = params.get('group') ?? '';
  const session = await loadSession();
  const writable = canWrite(session, stream);
  const query = {
    stream,
    group,
    after: params.get('after') ?? undefined,
    from: params.get('from') ?? undefined,
    to: params.get('to') ?? undefined,
    count: '25',
  };
  const [overview, history, consumers, pel, ownership, blocked] = await Promise.all([
    get<Stream[]>('overview'),
    get<{ groups: Series[] }>('history').catch(() => ({ groups: [] as Series[] })),
    get<Consumer[]>('consumers', { stream, group }),
    get<{ items: Pending[]; next: string | null }>('pending', query),
    ownershipCard(stream, group),
    blockedKeysCard(stream, group),
  ]);
  // The time range stays while paging: the next page is the rest of the same range.
  const range = Object.fromEntries((['from', 'to'] as const).flatMap((k) => (query[k] ? [[k, query[k]]] : [])));
  const go = (extra: Record<string, string>) => {
    location.hash = `group?${new URLSearchParams({ stream, group, ...extra }).toString()}`;
  };

  const consumerRows = consumers.map((c) => [
    ident(c.name),
    c.pending,
    duration(c.idleMs),
    consumerState(c),
    c.holds.join(' '),
    // A live consumer is not offered for deletion; one judged by old Redis' idle time is, with a warning.
    writable && !c.active
      ? h(
          'button',
          {
            class: 'danger',
            onclick: () => {
              const quiet = c.liveness === 'idle' ? ' Redis < 7.2 cannot tell a quiet consumer from a gone one.' : '';
              if (!confirm(`Delete consumer "${c.name}"? Refused while it holds pending entries.${quiet}`)) return;
              void act(`Delete ${c.name}`, () => post('consumers/delete', { stream, group, consumer: c.name }), rerender);
            },
          },
          'delete',
        )
      : '',
  ]);

  const pelRows = pel.items.map((e) => [
    ident(e.id),
    ident(when(e.time)),
    ident(when(e.publishedAt)),
    ident(e.consumer),
    lastDelivery(e),
    e.deliveries,
    lastError(e),
    payload(e.fields),
    writable
      ? h(
          'span',
          {},
          h(
            'button',
            {
              'data-test': 'ack',
              onclick: () =>
                confirm(`Acknowledge ${e.id}? The group will NOT run it: it counts as done.`) &&
                void act(`Ack ${e.id}`, () => post('ack', { stream, group, id: e.id }), rerender),
            },
            'ack',
          ),
          ' ',
          h(
            'button',
            {
              onclick: () => {
                const to = prompt(`Claim ${e.id} to which consumer?`);
                if (to) void act(`Claim ${e.id}`, () => post('claim', { stream, group, id: e.id, consumer: to }), rerender);
              },
            },
            'claim',
          ),
          ' ',
          h(
            'button',
            {
              class: 'danger',
              onclick: () =>
                confirm(`Send ${e.id} to the dead-letter stream?`) &&
                void act(`Park ${e.id}`, () => post('park', { stream, group, id: e.id }), rerender),
            },
            'to dead letters',
          ),
        )
      : '',
  ]);

  const find = h('input', { name: 'id', placeholder: 'entry id' }) as HTMLInputElement;
  const from = h('input', { type: 'datetime-local', name: 'from' }) as HTMLInputElement;
  const to = h('input', { type: 'datetime-local', name: 'to' }) as HTMLInputElement;
  const found = h('div', {});
  const cursor = h('input', { name: 'cursor', placeholder: 'id, or empty for the end' }) as HTMLInputElement;
  const cursorTime = h('input', { type: 'datetime-local', name: 'cursor-time' }) as HTMLInputElement;
  const previewOut = h('div', {});
  const target = () =>
    cursorTime.value ? { time: toMs(cursorTime.value) } : cursor.value ? { id: cursor.value.trim() } : { end: 'true' };

  return h(
    'div',
    { 'data-test': 'group' },
    h(
      'section',
      { class: 'card' },
      h('h2', {}, `${stream} / ${group}`),
      groupFigures(overview, stream, group),
      chart(history.groups.find((g) => g.stream === stream && g.group === group)),
      h('h3', {}, 'Consumers'),
      table(['consumer', 'pending', 'idle', 'state', 'holds', ''], consumerRows, [1, 2]),
    ),
    ownership,
    blocked,
    searchPanel(stream, { group }),
    h(
      'section',
      { class: 'card' },
      h('h2', {}, 'Pending entries', h('small', {}, 'delivered, not acknowledged; oldest first')),
      h(
        'form',
        {
          class: 'inline',
          onsubmit: (ev) => {
            ev.preventDefault();
            go({ ...(from.value ? { from: toMs(from.value)! } : {}), ...(to.value ? { to: toMs(to.value)! } : {}) });
          },
        },
        'from ',
        from,
        ' to ',
        to,
        h('button', { type: 'submit' }, 'show range'),
      ),
      h(
        'form',
        {
          class: 'inline',
          onsubmit: (ev) => {
            ev.preventDefault();
            get<{ entry: { id: string; fields: Pairs | null; pending: { consumer: string; deliveries: number } | null } | null }>(
              'entry',
              { stream, group, id: find.value.trim() },
            )
              .then(({ entry }) =>
                found.replaceChildren(
                  entry
                    ? h(
                        'div',
                        {},
                        `${entry.id}: ${entry.pending ? `pending at ${entry.pending.consumer}, ${entry.pending.deliveries} deliveries` : 'not pending in this group'}`,
                        payload(entry.fields),
                      )
                    : h('span', { class: 'muted' }, 'No such entry.'),
                ),
              )
              .catch((err: Error) => notify(err.message, true));
          },
        },
        find,
        h('button', { type: 'submit' }, 'find by id'),
      ),
      found,
      table(
        ['id', 'added at', 'published at', 'consumer', 'last delivery', 'deliveries', 'last error', 'payload', ''],
        pelRows,
        [5],
      ),
      h(
        'div',
        { class: 'pager' },
        pel.next
          ? h('button', { 'data-test': 'next-page', onclick: () => go({ ...range, after: pel.next! }) }, 'next page')
          : h('span', { class: 'muted' }, 'end of the PEL'),
      ),
    ),
    h(
      'section',
      { class: 'card' },
      h('h2', {}, 'Group cursor', h('small', {}, 'XGROUP SETID: re-deliver or skip entries')),
      h(
        'form',
        {
          class: 'inline',
          onsubmit: (ev) => {
            ev.preventDefault();
            get<Preview>('cursor-preview', { stream, group, ...target() })
              .then((p) => {
                const what =
                  p.effect === 'none'
                    ? 'nothing changes'
                    : `${p.entries}${p.capped ? '+' : ''} entries would be ${p.effect === 'redeliver' ? 're-delivered' : 'skipped'}`;
                previewOut.replaceChildren(
                  h(
                    'p',
                    { 'data-test': 'preview' },
                    `Dry run: ${p.from} → ${p.to}: ${what}; ${p.pending} pending stay pending.${p.activeConsumers.length ? ` Active consumers: ${p.activeConsumers.join(', ')}.` : ''}${p.pastEnd ? ` Past the last entry ${p.lastId}: entries added with ids up to ${p.to} would be skipped too.` : ''}`,
                  ),
                  writable
                    ? h(
                        'button',
                        {
                          class: 'danger',
                          onclick: () => {
                            const why = [
                              p.activeConsumers.length > 0 ? 'Consumers are active.' : '',
                              p.pastEnd ? 'The cursor would be past the last entry: new entries would be skipped.' : '',
                            ].join(' ');
                            const force = why.trim() !== '' && confirm(`${why.trim()} Move the cursor anyway (force)?`);
                            void act('Move cursor', () => post('cursor', { stream, group, ...target(), force }), rerender);
                          },
                        },
                        'apply',
                      )
                    : '',
                );
              })
              .catch((err: Error) => notify(err.message, true));
          },
        },
        cursor,
        ' or time ',
        cursorTime,
        h('button', { type: 'submit' }, 'dry run'),
      ),
      previewOut,
    ),
  );
}
