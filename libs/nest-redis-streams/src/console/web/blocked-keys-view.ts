import { get } from './api.js';
import { duration, h, ident, route, table, when } from './dom.js';

interface BlockedKey {
  stream: string;
  group: string;
  key: string;
  state: string;
  blockingEntry: string;
  current?: string;
  deadLetter?: string;
  since: number;
  waiting: number;
}

/** Rows shown on the group page; the blocked-keys page lists them all. */
const CARD_ROWS = 5;

/** What a state means to someone deciding what to do about it. */
const STATE_HINTS: Record<string, string> = {
  failing: 'the blocking entry is being retried',
  parked: 'the blocking entry is in the dead-letter stream: re-drive or discard it to release the key',
  releasing: 'released: the held entries go back one at a time, in order',
  unreadable: 'the record is not one this version understands',
};

/** The table of blocked keys: the blocking entry and its dead letter link to their entry pages. */
function blockedTable(items: BlockedKey[], withStream: boolean): HTMLElement {
  const now = Date.now();
  const rows = items.map((b) => [
    ...(withStream
      ? [h('a', { class: 'link', href: route('group', { stream: b.stream, group: b.group }) }, ident(b.stream))]
      : []),
    ident(b.group),
    ident(b.key),
    h('span', { title: STATE_HINTS[b.state] ?? '', class: b.state === 'releasing' ? undefined : 'loss' }, b.state),
    h(
      'span',
      {},
      b.blockingEntry
        ? h(
            'a',
            {
              class: 'link',
              'data-test': 'blocking-entry',
              href: route('entry', { stream: b.stream, id: b.blockingEntry, group: b.group }),
            },
            ident(b.blockingEntry),
          )
        : '',
      b.current ? h('small', { class: 'muted' }, ` running ${b.current}`) : '',
    ),
    b.deadLetter
      ? h(
          'a',
          {
            class: 'link',
            'data-test': 'blocking-dead-letter',
            href: route('entry', { stream: b.stream, id: b.deadLetter, deadLetter: 'true' }),
          },
          ident(b.deadLetter),
        )
      : '-',
    b.waiting,
    b.since > 0 ? h('span', { title: when(b.since) }, `${duration(Math.max(0, now - b.since))} ago`) : '?',
  ]);
  const headers = ['group', 'key', 'state', 'blocking entry', 'dead letter', 'waiting', 'blocked since'];
  return table(withStream ? ['stream', ...headers] : headers, rows, [withStream ? 6 : 5]);
}

function summary(items: BlockedKey[]): string {
  const waiting = items.reduce((sum, b) => sum + b.waiting, 0);
  const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  return `${count(items.length, 'key', 'keys')} blocked · ${count(waiting, 'entry', 'entries')} held`;
}

/**
 * The group page's box of keys held back by `onDeadLetter: 'block-key'`: the oldest few and a
 * link to them all. Nothing (null) when no key of the group is blocked.
 */
export async function blockedKeysCard(stream: string, group: string): Promise<HTMLElement | null> {
  let items: BlockedKey[];
  try {
    ({ items } = await get<{ items: BlockedKey[] }>('blocked-keys', { stream, group }));
  } catch (err) {
    // The rest of the group page stays useful (e.g. an ACL without HGETALL); the box says why it is empty.
    return h(
      'section',
      { class: 'card', 'data-test': 'blocked-keys-card' },
      h('h2', {}, 'Blocked keys'),
      h('p', { class: 'error-text' }, `Could not read the blocked keys: ${(err as Error).message}`),
    );
  }
  if (items.length === 0) return null;
  return h(
    'section',
    { class: 'card', 'data-test': 'blocked-keys-card' },
    h('h2', {}, 'Blocked keys', h('small', {}, `${summary(items)} · oldest first`)),
    blockedTable(items.slice(0, CARD_ROWS), false),
    h(
      'a',
      { class: 'link', 'data-test': 'blocked-keys-link', href: route('blocked', { stream, group }) },
      items.length > CARD_ROWS ? `all ${items.length} blocked keys` : 'blocked keys page',
    ),
  );
}

/** `#blocked?stream=&group=&partitions=`: every blocked key of a group (or of every group), oldest first. */
export async function blockedKeysView(params: URLSearchParams): Promise<HTMLElement> {
  const stream = params.get('stream') ?? '';
  const group = params.get('group') ?? undefined;
  const partitions = params.get('partitions') ?? undefined;
  const { items } = await get<{ items: BlockedKey[] }>('blocked-keys', { stream, group, partitions });
  return h(
    'section',
    { class: 'card', 'data-test': 'blocked-keys' },
    h('h2', {}, `Blocked keys of ${stream}${group ? ` / ${group}` : ''}`, h('small', {}, "onDeadLetter: 'block-key'")),
    h(
      'p',
      { 'data-test': 'blocked-summary' },
      items.length === 0
        ? 'No key is blocked.'
        : `${summary(items)}. A key waits until its blocking entry is re-driven and succeeds, or is discarded (dead letters page).`,
    ),
    items.length > 0 ? blockedTable(items, (Number(partitions) || 1) > 1) : '',
    h('a', { class: 'link', href: route('dead-letters', { stream }) }, 'dead letters'),
  );
}
