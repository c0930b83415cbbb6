import { get } from './api.js';
import { h, ident, route, when } from './dom.js';
import { type Pairs, payload } from './payload.js';

interface Entry {
  id: string;
  time: number;
  fields: Pairs | null;
  pending: { consumer: string; idleMs: number; deliveries: number } | null;
}

interface Letter {
  id: string;
  reason: string;
  stream: string;
  originalId: string;
  group: string;
  error: string;
  deliveries: number;
  parkedAt: number;
  fields: Pairs;
}

/** One entry (`#entry?stream=&id=&group=`) or one dead letter (`&deadLetter=true`), fields expanded. */
export async function entryView(params: URLSearchParams): Promise<HTMLElement> {
  const stream = params.get('stream') ?? '';
  const id = params.get('id') ?? '';
  const group = params.get('group') ?? undefined;
  if (params.get('deadLetter') === 'true') {
    const { letter } = await get<{ letter: Letter | null }>('dead-letter', { stream, id });
    return h(
      'section',
      { class: 'card', 'data-test': 'entry' },
      h('h2', {}, `Dead letter ${id}`, h('small', {}, stream)),
      letter
        ? h(
            'div',
            {},
            h(
              'p',
              {},
              `${letter.reason} in group ${letter.group} after ${letter.deliveries} deliveries, parked ${when(letter.parkedAt)}; original id `,
              ident(letter.originalId),
            ),
            h('p', { class: 'error-text' }, letter.error),
            open(payload(letter.fields)),
          )
        : h('p', { class: 'muted' }, 'No such dead letter (re-driven or discarded).'),
      h('a', { class: 'link', href: route('dead-letters', { stream }) }, 'all dead letters'),
    );
  }
  const { entry } = await get<{ entry: Entry | null }>('entry', { stream, id, group });
  return h(
    'section',
    { class: 'card', 'data-test': 'entry' },
    h('h2', {}, `Entry ${id}`, h('small', {}, stream)),
    entry
      ? h(
          'div',
          {},
          h(
            'p',
            {},
            `added ${when(entry.time)}`,
            group
              ? entry.pending
                ? `; pending at ${entry.pending.consumer}, ${entry.pending.deliveries} deliveries`
                : `; not pending in ${group}`
              : '',
          ),
          open(payload(entry.fields)),
        )
      : h('p', { class: 'muted' }, 'No such entry (trimmed or deleted).'),
    group ? h('a', { class: 'link', href: route('group', { stream, group }) }, `back to ${group}`) : '',
  );
}

/** The fields shown unfolded: the entry is what the viewer came for. */
function open(details: HTMLElement): HTMLElement {
  details.setAttribute('open', '');
  return details;
}
