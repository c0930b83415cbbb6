import { get } from './api.js';
import { h, ident, table, when } from './dom.js';
import type { AuditRecord } from '../../operations/audit-log.js';

const outcome = (r: AuditRecord) => {
  if (r.state === 'started') return h('span', { class: 'loss' }, 'started, no outcome recorded: check before repeating it');
  return h(
    'span',
    { class: r.ok ? undefined : 'loss' },
    r.ok ? r.result : `${r.state === 'refused' ? 'refused' : 'failed'}: ${r.result}`,
  );
};

const records = (items: AuditRecord[]) =>
  table(
    ['when', 'who', 'action', 'stream', 'group', 'target', 'parameters', 'result'],
    items.map((r) => [ident(when(r.at)), r.actor, ident(r.action), r.stream, r.group, ident(r.target), r.params, outcome(r)]),
  );

/** Every write made through the console or the CLI, newest first; refused requests below, kept apart. */
export async function auditView(): Promise<HTMLElement> {
  const [writes, refusals] = await Promise.all([
    get<{ items: AuditRecord[] }>('audit', { count: '100' }),
    get<{ items: AuditRecord[] }>('audit', { count: '100', refusals: 'true' }),
  ]);
  return h(
    'section',
    { class: 'card', 'data-test': 'audit' },
    h('h2', {}, 'Audit', h('small', {}, 'who did what, when, and how it went')),
    records(writes.items),
    h('h3', {}, 'Refused requests', h('small', {}, 'nothing was changed; kept apart so that they never push out a write')),
    records(refusals.items),
  );
}
