import { h, jsonTree } from './dom.js';

/** An entry's fields in stored order, as the API returns them. */
export type Pairs = Array<[string, string]>;

/** The payload: each field, values that are JSON as a tree. */
export function payload(fields: Pairs | null): HTMLElement {
  if (fields === null) return h('span', { class: 'loss' }, 'payload gone (trimmed)');
  return h(
    'details',
    {},
    h('summary', {}, `${fields.length} fields`),
    ...fields.map(([n, v]) => h('div', {}, h('span', { class: 'key' }, n), jsonTree(v))),
  );
}
