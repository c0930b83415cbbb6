import type { FailureGroup, FailureGroups } from '../../operations/failure-groups.js';
import type { RedrivePreview } from '../../operations/redrive-preview.js';
import { ApiError, get, post } from './api.js';
import { h, ident, replace, route, table, when } from './dom.js';
import { act, notify } from './notice.js';

type Place = NonNullable<RedrivePreview['oldest']>;

const counts = (map: Record<string, number>) =>
  Object.entries(map)
    .map(([name, n]) => `${name || '(none)'} ${n}`)
    .join(', ');

const coverage = (read: { scanned: number; total: number; complete: boolean }) =>
  read.complete
    ? `All ${read.total} records read.`
    : `Only the oldest ${read.scanned} of ${read.total} records were read (the scan limit): the counts cover those.`;

/**
 * The card the dead-letter page opens on: the stream's failure groups, each with a link to its
 * records (the list below, filtered by cause) and a dry run that shows what a re-drive of the
 * group would do before the operator asks for it.
 */
export async function failureGroupsCard(
  stream: string,
  writable: boolean,
  activeCause: string,
  rerender: () => Promise<void>,
): Promise<HTMLElement> {
  const found = await get<FailureGroups>('dead-letters/groups', { stream });
  const preview = h('div', { 'data-test': 'redrive-preview' });
  const keyField = h('input', { name: 'key', placeholder: 'ordering-key field (optional)' }) as HTMLInputElement;
  const dryRun = async (group: FailureGroup) => {
    try {
      const p = await get<RedrivePreview>('dead-letters/redrive-preview', {
        stream,
        cause: group.fingerprint,
        key: keyField.value,
      });
      replace(preview, previewCard(stream, group, p, writable, rerender));
    } catch (err) {
      notify(`Dry run of ${group.fingerprint}: ${err instanceof Error ? err.message : String(err)}`, true);
    }
  };
  const rows = found.groups.map((g) => [
    ident(g.fingerprint),
    g.count,
    g.errorClass,
    h('span', { class: 'wide', title: g.sample }, g.pattern),
    ident(when(g.firstSeen)),
    ident(when(g.lastSeen)),
    counts(g.groups),
    h(
      'span',
      {},
      h(
        'a',
        { class: 'link', 'data-test': 'group-entries', href: route('dead-letters', { stream, cause: g.fingerprint }) },
        'entries',
      ),
      ' ',
      // A link, not a button: a dry run reads and changes nothing, so read-only viewers have it too.
      h(
        'a',
        {
          class: 'link',
          href: route('dead-letters', { stream, cause: g.fingerprint }),
          'data-test': 'dry-run',
          onclick: (ev) => {
            ev.preventDefault();
            void dryRun(g);
          },
        },
        'dry run',
      ),
    ),
  ]);
  return h(
    'section',
    { class: 'card', 'data-test': 'failure-groups' },
    h('h2', {}, 'Failure groups', h('small', {}, 'error class and message, with numbers, ids and quoted values folded')),
    h('p', {}, `${found.groups.length} groups. ${coverage(found)}`),
    table(
      ['fingerprint', 'count', 'class', 'pattern', 'first seen', 'last seen', 'parked by', ''],
      rows,
      [1],
      found.groups.map((g) => (g.fingerprint === activeCause ? 'active' : '')),
    ),
    h('p', {}, 'Keys in the dry run: ', keyField),
    preview,
  );
}

function previewCard(
  stream: string,
  group: FailureGroup,
  p: RedrivePreview,
  writable: boolean,
  rerender: () => Promise<void>,
): HTMLElement {
  const place = (x: Place | null) => (x ? `${x.id} (parked ${when(x.parkedAt)}, was ${x.originalId || '?'})` : '-');
  const keys = p.keys
    ? `Keys (${p.keys.field}): ${p.keys.distinct} distinct, ${p.keys.missing} without it` +
      (p.keys.top.length
        ? `; most: ${p.keys.top
            .slice(0, 10)
            .map((k) => `${k.key} ${k.count}`)
            .join(', ')}`
        : '') +
      '.'
    : 'Name an ordering-key field above to see which keys they hold.';
  return h(
    'div',
    { class: 'card' },
    h('h3', {}, `Dry run: ${group.errorClass || '(no class)'} ${group.pattern}`),
    h(
      'p',
      { 'data-test': 'preview-count' },
      `Would re-drive ${p.wouldRedrive} dead letters (oldest first); ${p.tombstones} tombstones stay.`,
    ),
    h('p', {}, `Oldest: ${place(p.oldest)}. Newest: ${place(p.newest)}.`),
    h('p', {}, `Run again by: ${counts(p.groups) || '-'}. ${keys}`),
    h('p', {}, coverage(p)),
    writable && p.wouldRedrive > 0 ? redriveButtons(stream, group, p, rerender) : '',
  );
}

/** Re-drive the whole group at once, or as a canary: N first, the rest only if few fail again. */
function redriveButtons(stream: string, group: FailureGroup, p: RedrivePreview, rerender: () => Promise<void>): HTMLElement {
  const canary = h('input', {
    name: 'canary',
    value: String(Math.min(10, p.wouldRedrive)),
    title: 'canaries',
  }) as HTMLInputElement;
  const show = (runId: string) => (location.hash = route('dead-letters', { stream, run: runId }).slice(1));
  const startCanary = async () => {
    const body = { stream, cause: group.fingerprint, canary: Number(canary.value) };
    const { runId } = await post<{ runId: string }>('dead-letters/canary', body).catch((err: unknown) => {
      // One canary per stream and cause: the answer names the live one, which the page then shows.
      const live = err instanceof ApiError ? err.body?.runId : undefined;
      if (typeof live === 'string') show(live);
      throw err;
    });
    show(runId);
  };
  return h(
    'p',
    {},
    h(
      'button',
      {
        class: 'primary',
        'data-test': 'redrive-group',
        onclick: () =>
          confirm(`Re-drive the ${p.wouldRedrive} dead letters of failure group ${group.fingerprint}?`) &&
          void act(
            `Re-drive group ${group.fingerprint}`,
            // Up to the dry run's newest record: the re-drive covers what it counted, not what parked since.
            () => post('dead-letters/redrive-matching', { stream, cause: group.fingerprint, upTo: p.upTo ?? undefined }),
            rerender,
          ),
      },
      `re-drive ${p.wouldRedrive}`,
    ),
    ' or a canary: ',
    canary,
    ' first, then the rest at the rate limit unless they fail again ',
    h(
      'button',
      {
        class: 'primary',
        'data-test': 'canary-start',
        onclick: () =>
          void startCanary().catch((err: unknown) => notify(`Canary: ${err instanceof Error ? err.message : String(err)}`, true)),
      },
      'start canary',
    ),
  );
}
