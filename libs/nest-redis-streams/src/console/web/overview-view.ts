import { get } from './api.js';
import { type Series, sparkline } from './charts.js';
import { duration, h, route, table } from './dom.js';

export interface Group {
  stream: string;
  group: string;
  pending: number;
  oldestIdleMs: number;
  lag: number | null;
  deadLetters: number;
  groupDeadLetters: number | null;
  consumers: number;
  badges: string[];
  owner: { owner: string | null; generation: number; leaseLeftMs: number | null } | null;
  error?: string;
}
export interface Stream {
  stream: string;
  length: number;
  retention: { maxLen?: number; minIdAgeMs?: number } | null;
  deadLetterStream: string;
  readOnly: boolean;
  groups: Group[];
}

function retention(r: Stream['retention']): string {
  if (!r) return 'not configured';
  return [
    r.maxLen !== undefined ? `MAXLEN ~${r.maxLen}` : '',
    r.minIdAgeMs !== undefined ? `older than ${duration(r.minIdAgeMs)}` : '',
  ]
    .filter(Boolean)
    .join(', ');
}

/** Under exclusive ownership: the instance owning the (partition) stream and its generation. */
function owner(o: Group['owner']): HTMLElement | string {
  if (!o) return '';
  if (o.owner === null) return h('span', { class: 'badge warn', title: `generation ${o.generation}` }, 'no owner');
  return h('span', { title: `generation ${o.generation}` }, o.owner, h('small', { class: 'muted' }, ` gen ${o.generation}`));
}

/** GET api/capabilities: what every node offers, and the nodes below their patch floor. */
export interface Capabilities {
  claim: boolean;
  idmp: boolean;
  ackDelete: boolean;
  trimConditions: boolean;
  nack: boolean;
  nodes: Array<{ node: string; server: string; version: string; upgradeTo: string | null }>;
}

const CAPABILITY_NAMES: Array<[keyof Omit<Capabilities, 'nodes'>, string]> = [
  ['claim', 'XREADGROUP CLAIM'],
  ['idmp', 'XADD IDMP'],
  ['trimConditions', 'ACKED trim'],
  ['ackDelete', 'XACKDEL'],
  ['nack', 'XNACK'],
];

/** One line over the streams: the servers, which stream features the transport may use, and who needs an upgrade. */
function capabilityLine(c: Capabilities | null): HTMLElement | string {
  if (!c || c.nodes.length === 0) return '';
  const versions = [...new Set(c.nodes.map((n) => `${n.server} ${n.version}`))].join(', ');
  const below = c.nodes.filter((n) => n.upgradeTo !== null);
  return h(
    'p',
    { class: 'muted', 'data-test': 'capabilities' },
    `${versions} · `,
    ...CAPABILITY_NAMES.map(([key, label]) =>
      h(
        'span',
        { class: `badge ${c[key] ? 'ok' : 'off'}`, title: c[key] ? 'every node has it' : 'not on every node' },
        `${label} ${c[key] ? 'yes' : 'no'}`,
      ),
    ),
    ...(below.length > 0
      ? [
          h(
            'span',
            { class: 'badge warn' },
            `below the stream RESTORE fix: ${below.map((n) => `${n.node || n.server} → upgrade to ${n.upgradeTo}`).join(', ')}`,
          ),
        ]
      : []),
  );
}

/** How much a group needs a look: read errors first, then each badge. */
const trouble = (g: Group) => (g.error ? 10 : 0) + g.badges.length;

/** The groups' badges (or the error that kept their figures from being read). */
export function badges(g: Group): HTMLElement {
  return h(
    'span',
    {},
    ...(g.error
      ? [h('span', { class: 'badge bad' }, g.error)]
      : g.badges.map((b) => h('span', { class: `badge ${b}` }, b.replace('-', ' ')))),
  );
}

/** Problem groups first in each stream, and streams with problems first; otherwise the order Redis gave. */
export function problemsFirst(streams: Stream[]): Stream[] {
  const sorted = streams.map((s) => ({ ...s, groups: [...s.groups].sort((a, b) => trouble(b) - trouble(a)) }));
  const worst = (s: Stream) => Math.max(0, ...s.groups.map(trouble));
  return sorted.sort((a, b) => worst(b) - worst(a));
}

/** Every stream and group with its figures and badges; groups that need a look first, highlighted. */
export async function overviewView(): Promise<HTMLElement> {
  const [overview, history, capabilities] = await Promise.all([
    get<Stream[]>('overview'),
    // The charts and the capability line are extras: without them (an old ACL), the figures still show.
    get<{ groups: Series[] }>('history').catch(() => ({ groups: [] as Series[] })),
    get<Capabilities>('capabilities').catch(() => null),
  ]);
  const streams = problemsFirst(overview);
  const seriesOf = (stream: string, group: string) => history.groups.find((g) => g.stream === stream && g.group === group);
  if (streams.length === 0) return h('p', { class: 'muted' }, 'No streams with consumer groups were found.');
  return h(
    'div',
    { 'data-test': 'overview' },
    capabilityLine(capabilities),
    ...streams.map((s) =>
      h(
        'section',
        { class: 'card' },
        h(
          'h2',
          {},
          s.stream,
          h('small', {}, `${s.length} entries · retention ${retention(s.retention)}${s.readOnly ? ' · read-only' : ''}`),
          h('a', { class: 'link', 'data-test': 'scheduled-link', href: route('scheduled', { stream: s.stream }) }, 'scheduled'),
          h('a', { class: 'link', href: route('search', { stream: s.stream }), 'data-test': 'stream-search-link' }, 'search'),
        ),
        table(
          ['group', 'pending', 'oldest idle', 'lag', 'dead letters', 'consumers', 'owner', 'last hour', ''],
          s.groups.map((g) => [
            h('a', { class: 'link ident', href: route('group', { stream: s.stream, group: g.group }) }, g.group),
            g.pending,
            duration(g.oldestIdleMs),
            g.lag === null ? 'unknown' : g.lag,
            h(
              'a',
              { class: 'link', href: route('dead-letters', { stream: s.stream, group: g.group }) },
              g.groupDeadLetters === null ? `${g.deadLetters} (all groups)` : String(g.groupDeadLetters),
            ),
            g.consumers,
            owner(g.owner),
            sparkline(seriesOf(s.stream, g.group)),
            badges(g),
          ]),
          [1, 2, 3, 4, 5],
          s.groups.map((g) => (trouble(g) > 0 ? 'problem' : '')),
        ),
      ),
    ),
  );
}
