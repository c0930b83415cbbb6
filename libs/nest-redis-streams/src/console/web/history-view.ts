import type { EntryHistory } from '../../operations/entry-history.js';
import { get } from './api.js';
import { h, ident, route, table, when } from './dom.js';

/** An entry's history: original id → deliveries → parked → re-driven → outcome. */
export async function historyView(params: URLSearchParams): Promise<HTMLElement> {
  const stream = params.get('stream') ?? '';
  const history = await get<EntryHistory>('entry-history', { stream, id: params.get('id') ?? '' });
  const rows = history.steps.map((s) => [
    ident(when(s.at) || '-'),
    ident(s.what),
    ident(s.id),
    h('span', { class: 'wide' }, s.detail),
  ]);
  return h(
    'section',
    { class: 'card', 'data-test': 'history' },
    h('h2', {}, `History of ${history.id}`, h('small', {}, stream)),
    table(['when', 'what', 'id', 'detail'], rows),
    h(
      'p',
      {},
      history.complete
        ? 'Every dead letter since the entry was added was read.'
        : `Only ${history.scanned} dead letters since the entry was added were read (the scan limit).`,
      ' ',
      h('a', { class: 'link', href: route('dead-letters', { stream }) }, 'dead letters'),
    ),
  );
}
