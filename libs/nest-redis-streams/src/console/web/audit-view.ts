import { get } from './api.js';
import { h, table } from './dom.js';
import type { AuditRecord } from '../../operations/audit-log.js';

/** Every write made through the console or the CLI, newest first. */
export async function auditView(): Promise<HTMLElement> {
  const { items } = await get<{ items: AuditRecord[] }>('audit', { count: '100' });
  return h(
    'section',
    { class: 'card', 'data-test': 'audit' },
    h('h2', {}, 'Audit', h('small', {}, 'who did what, when, and how it went')),
    table(
      ['when', 'who', 'action', 'stream', 'group', 'target', 'parameters', 'result'],
      items.map((r) => [
        new Date(r.at).toISOString(),
        r.actor,
        r.action,
        r.stream,
        r.group,
        r.target,
        r.params,
        h('span', { class: r.ok ? undefined : 'loss' }, r.ok ? r.result : `failed: ${r.result}`),
      ]),
    ),
  );
}
