// Every node of the page is built here: text goes in through text nodes only (never innerHTML),
// so entry ids, field names and values, error texts and consumer names can never become markup.

type Child = Node | string | number | null | undefined | false;
type Attrs = {
  class?: string;
  title?: string;
  href?: string;
  rel?: string;
  type?: string;
  value?: string;
  placeholder?: string;
  name?: string;
  onclick?: (e: Event) => void;
  onsubmit?: (e: Event) => void;
  'data-test'?: string;
};

export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined) continue;
    if (key === 'onclick' || key === 'onsubmit') el.addEventListener(key.slice(2), value as EventListener);
    else el.setAttribute(key, String(value));
  }
  for (const child of children)
    if (child !== null && child !== undefined && child !== false) el.append(typeof child === 'object' ? child : String(child));
  return el;
}

/** A link inside the page: `#view?key=value`, values URL-encoded. */
export function route(view: string, params: Record<string, string> = {}): string {
  const query = new URLSearchParams(params).toString();
  return `#${view}${query ? `?${query}` : ''}`;
}

export function replace(target: HTMLElement, ...children: Child[]): void {
  target.replaceChildren();
  for (const child of children)
    if (child !== null && child !== undefined && child !== false)
      target.append(typeof child === 'object' ? child : String(child));
}

/** A moment as UTC date and time to the second (`2026-05-01 12:00:07Z`): the same for every viewer. */
export function when(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms) || ms <= 0) return '';
  // A stream id's time goes to 2^64 - 1 ms, past what a Date holds (toISOString throws): the
  // milliseconds then, as the CLI prints them (operations/time-text.ts; this page loads no server code).
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : `${date.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** An id, name or reason that must stay on one line (copied whole, compared by eye). */
export function ident(text: string, cls?: string): HTMLElement {
  return h('span', { class: cls ? `ident ${cls}` : 'ident' }, text);
}

export function table(headers: string[], rows: Child[][], numeric: number[] = [], rowClasses: string[] = []): HTMLElement {
  return h(
    'table',
    {},
    h('thead', {}, h('tr', {}, ...headers.map((t, i) => h('th', { class: numeric.includes(i) ? 'num' : undefined }, t)))),
    h(
      'tbody',
      {},
      ...rows.map((r, n) =>
        h(
          'tr',
          { class: rowClasses[n] || undefined },
          ...r.map((c, i) => h('td', { class: numeric.includes(i) ? 'num' : undefined }, c)),
        ),
      ),
    ),
  );
}

export function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return minutes < 60
    ? `${minutes} min ${Math.floor((ms % 60_000) / 1_000)} s`
    : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** A collapsible JSON tree of a value; text that is not JSON is shown as it is. */
export function jsonTree(text: string): HTMLElement {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return h('pre', {}, text);
  }
  if (value === null || typeof value !== 'object') return h('pre', {}, text);
  return h('div', { class: 'tree' }, node(value));
}

function node(value: unknown): HTMLElement {
  if (value === null || typeof value !== 'object') {
    const cls = typeof value === 'string' ? 'str' : 'num';
    return h('span', { class: cls }, JSON.stringify(value));
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v] as const) : Object.entries(value);
  return h('ul', {}, ...entries.map(([k, v]) => h('li', {}, h('span', { class: 'key' }, k), ': ', node(v))));
}
