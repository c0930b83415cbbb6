import { get } from './api.js';
import { h, ident, route, table, when } from './dom.js';
import { notify } from './notice.js';
import { payload } from './payload.js';
import type { SearchHit, SearchResult as Answer } from '../../operations/search.js';

type Hit = SearchHit;

/** Where the box searches: the stream, a group's PEL (or, chosen in the box, the whole stream) or the dead letters. */
export type SearchScope = { stream: true } | { group: string } | { deadLetters: true };

const STOPPED: Record<string, string> = { limit: 'the result limit', entries: 'the entry budget', time: 'the time budget' };

/** The entry view of a hit: the stream entry (with its PEL row in the group) or the dead letter. */
function entryLink(stream: string, hit: Hit, group: string | undefined): HTMLElement {
  const params: Record<string, string> = hit.deadLetter
    ? { stream, id: hit.id, deadLetter: 'true' }
    : { stream: hit.stream, id: hit.id, ...(group ? { group } : {}) };
  return h('a', { class: 'link ident', href: route('entry', params), 'data-test': 'search-hit' }, hit.id);
}

/**
 * The search box of the stream, group and dead-letter pages: a condition over fields, headers and the
 * decoded payload, a window, an order; the answer lists the matches (linked to the entry view),
 * says how many entries were looked at, and goes on from its cursor when a budget stopped it.
 */
export function searchPanel(stream: string, scope: SearchScope): HTMLElement {
  const where = h('input', {
    name: 'where',
    class: 'wide',
    placeholder: 'payload.orderId == "A1" && headers.tenant != "x"',
  }) as HTMLInputElement;
  const since = h('input', { name: 'since', placeholder: 'since: 1h, ISO date or id' }) as HTMLInputElement;
  const until = h('input', { name: 'until', placeholder: 'until' }) as HTMLInputElement;
  const newest = h('input', { type: 'checkbox', name: 'newest' }) as HTMLInputElement;
  const limit = h('input', { type: 'number', name: 'limit', value: '50', title: 'matches per request' }) as HTMLInputElement;
  const source =
    'group' in scope
      ? (h(
          'select',
          { name: 'source' },
          h('option', { value: 'pending' }, 'pending entries'),
          h('option', { value: 'stream' }, 'whole stream'),
        ) as HTMLSelectElement)
      : null;
  const out = h('div', { 'data-test': 'search-results' });
  let last: Record<string, string> = {};

  const run = (params: Record<string, string>, append: boolean) =>
    get<Answer>('search', params)
      .then((answer) => {
        const rows = answer.items.map((hit) => [
          entryLink(stream, hit, 'group' in scope ? scope.group : undefined),
          ident(when(hit.time)),
          hit.pending ? ident(hit.pending.consumer) : hit.deadLetter ? `${hit.deadLetter.reason} (${hit.deadLetter.group})` : '',
          payload(hit.fields),
        ]);
        const summary = h(
          'p',
          { 'data-test': 'search-summary' },
          `${answer.matched} matched, ${answer.scanned} entries looked at in ${answer.elapsedMs} ms; `,
          answer.exhausted ? 'the whole window was read.' : `stopped by ${STOPPED[answer.stoppedBy ?? 'limit']}. `,
          answer.cursor
            ? h(
                'button',
                { 'data-test': 'search-more', onclick: () => void run({ ...last, cursor: answer.cursor! }, true) },
                'go on',
              )
            : '',
        );
        const results = table(['id', 'time', 'pending at / reason', 'payload'], rows);
        if (append) out.append(results, summary);
        else out.replaceChildren(results, summary);
      })
      .catch((err: Error) => notify(err.message, true));

  return h(
    'section',
    { class: 'card', 'data-test': 'search' },
    h('h2', {}, 'Search', h('small', {}, 'fields, headers and payload; redacted values are not searchable')),
    h(
      'form',
      {
        class: 'inline',
        onsubmit: (ev) => {
          ev.preventDefault();
          const fromStream = source?.value === 'stream';
          // What a resumed request repeats: the target, condition and limit; the cursor keeps the window and order.
          last = {
            stream,
            where: where.value,
            limit: limit.value.trim(),
            ...('group' in scope && !fromStream ? { group: scope.group } : {}),
            ...('deadLetters' in scope ? { deadLetters: 'true' } : {}),
          };
          const window = { since: since.value.trim(), until: until.value.trim(), ...(newest.checked ? { newest: 'true' } : {}) };
          void run({ ...last, ...window }, false);
        },
      },
      source ?? '',
      where,
      since,
      until,
      h('label', {}, newest, ' newest first'),
      limit,
      h('button', { type: 'submit', 'data-test': 'search-submit' }, 'search'),
    ),
    out,
  );
}

/** The stream's own search page (`#search?stream=`), linked from the overview. */
export function streamSearchView(params: URLSearchParams): HTMLElement {
  return h('div', { 'data-test': 'stream-search' }, searchPanel(params.get('stream') ?? '', { stream: true }));
}
