import { canWrite, get, loadSession, post } from './api.js';
import { h, ident, route, table, when } from './dom.js';
import { payload } from './payload.js';
import { searchPanel } from './search-panel.js';
import { act } from './notice.js';
import { canaryPanel } from './canary-progress-view.js';
import { failureGroupsCard } from './failure-groups-view.js';

interface Letter {
  id: string;
  reason: string;
  stream: string;
  originalId?: string;
  group: string;
  error: string;
  errorClass: string;
  deliveries: number;
  parkedAt: number;
  fields: Array<[string, string]> | null;
}
interface Tally {
  total: number;
  byReason: Record<string, number>;
  lost: number;
}

const TOMBSTONES = ['payload-trimmed', 'trimmed-undelivered'];
const REASONS = ['', 'max-deliveries', 'non-retryable', 'undecodable', 'undecodable-event-id', ...TOMBSTONES];

/**
 * A stream's dead letters: its failure groups first (drill down by cause, dry-run a re-drive), then
 * the records: filter, re-drive (one, filtered, all), discard; tombstones as losses.
 */
export async function deadLettersView(params: URLSearchParams, rerender: () => Promise<void>): Promise<HTMLElement> {
  const stream = params.get('stream') ?? '';
  const filter = { reason: params.get('reason') ?? '', group: params.get('group') ?? '', cause: params.get('cause') ?? '' };
  const session = await loadSession();
  const writable = canWrite(session, stream);
  const page = await get<{ items: Letter[]; next: string | null; tally: Tally; deadLetterStream: string }>('dead-letters', {
    stream,
    ...filter,
    after: params.get('after') ?? undefined,
  });

  const reason = h(
    'select',
    { name: 'reason' },
    ...REASONS.map((r) => h('option', { value: r }, r || 'any reason')),
  ) as HTMLSelectElement;
  reason.value = filter.reason;
  const group = h('input', { name: 'group', placeholder: 'any group', value: filter.group }) as HTMLInputElement;
  const rows = page.items.map((d) => {
    const tomb = TOMBSTONES.includes(d.reason);
    return [
      ident(d.id),
      ident(when(d.parkedAt)),
      ident(d.reason, tomb ? 'loss' : undefined),
      d.group,
      d.deliveries,
      d.originalId
        ? h(
            'a',
            { class: 'link ident', 'data-test': 'history-link', href: route('history', { stream, id: d.originalId }) },
            d.originalId,
          )
        : '',
      ident(when(Number((d.originalId ?? '').split('-')[0]))),
      d.errorClass,
      h('span', { class: 'wide' }, d.error),
      tomb ? h('span', { class: 'loss' }, 'lost to trimming') : payload(d.fields),
      writable
        ? h(
            'span',
            {},
            tomb
              ? ''
              : h(
                  'button',
                  {
                    class: 'primary',
                    'data-test': 'redrive',
                    onclick: () =>
                      void act(`Re-drive ${d.id}`, () => post('dead-letters/redrive', { stream, id: d.id }), rerender),
                  },
                  're-drive',
                ),
            ' ',
            h(
              'button',
              {
                class: 'danger',
                onclick: () =>
                  confirm(`Discard ${d.id} for good?`) &&
                  void act(`Discard ${d.id}`, () => post('dead-letters/discard', { stream, id: d.id }), rerender),
              },
              'discard',
            ),
          )
        : '',
    ];
  });
  const filtered = Boolean(filter.reason || filter.group || filter.cause);
  const groups = await failureGroupsCard(stream, writable, filter.cause, rerender);
  const run = params.get('run');
  const losses = Object.entries(page.tally.byReason).filter(([r]) => TOMBSTONES.includes(r));
  return h(
    'div',
    { 'data-test': 'dead-letters' },
    run ? canaryPanel(run) : '',
    groups,
    h(
      'section',
      { class: 'card' },
      h('h2', {}, `Dead letters of ${stream}`, h('small', {}, page.deadLetterStream)),
      filter.cause
        ? h(
            'p',
            { 'data-test': 'cause-filter' },
            `Showing failure group ${filter.cause} only. `,
            h('a', { class: 'link', href: route('dead-letters', { stream }) }, 'all dead letters'),
          )
        : '',
      h(
        'p',
        {},
        `${page.tally.total} records: `,
        Object.entries(page.tally.byReason)
          .map(([r, n]) => `${r} ${n}`)
          .join(', ') || 'none',
        '. ',
        page.tally.lost > 0
          ? h(
              'span',
              { class: 'loss' },
              `Lost to trimming: ${page.tally.lost} entries (${losses.map(([r, n]) => `${n} ${r}`).join(', ')}).`,
            )
          : 'Nothing lost to trimming.',
      ),
      h(
        'form',
        {
          class: 'inline',
          onsubmit: (ev) => {
            ev.preventDefault();
            location.hash = route('dead-letters', {
              stream,
              ...(reason.value ? { reason: reason.value } : {}),
              ...(group.value ? { group: group.value } : {}),
              ...(filter.cause ? { cause: filter.cause } : {}),
            }).slice(1);
          },
        },
        reason,
        group,
        h('button', { type: 'submit' }, 'filter'),
        writable
          ? h(
              'button',
              {
                class: 'primary',
                'data-test': 'redrive-matching',
                onclick: (ev) => {
                  ev.preventDefault();
                  if (
                    !confirm(
                      filtered
                        ? 'Re-drive every dead letter that matches the filter?'
                        : 'Re-drive ALL dead letters of this stream?',
                    )
                  )
                    return;
                  void act(
                    'Re-drive',
                    () =>
                      post('dead-letters/redrive-matching', {
                        stream,
                        ...(filter.reason ? { reason: filter.reason } : {}),
                        ...(filter.group ? { group: filter.group } : {}),
                        ...(filter.cause ? { cause: filter.cause } : {}),
                        all: !filtered,
                      }),
                    rerender,
                  );
                },
              },
              filtered ? 're-drive filtered' : 're-drive all',
            )
          : '',
      ),
      table(
        ['id', 'parked at', 'reason', 'group', 'deliveries', 'original id', 'added at', 'class', 'error', 'payload', ''],
        rows,
        [4],
      ),
      page.next
        ? h(
            'div',
            { class: 'pager' },
            h('a', { class: 'link', href: route('dead-letters', { stream, ...filter, after: page.next }) }, 'next page'),
          )
        : '',
    ),
    searchPanel(stream, { deadLetters: true }),
  );
}
