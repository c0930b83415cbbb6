import { get } from './api.js';
import { duration, h, route, table } from './dom.js';

interface Ownership {
  stream: string;
  group: string;
  members: Array<{ member: string; leaseLeftMs: number; owns: number[] }>;
  partitions: Array<{ partition: number; stream: string; owner: string | null; generation: number; leaseLeftMs: number | null }>;
  unowned: number[];
  claims: number;
}

const lease = (ms: number | null) => (ms === null ? '-' : ms > 0 ? duration(ms) : 'expired');

/**
 * Exclusive ownership of the group, read from Redis: members with their lease, and per partition
 * its owner, generation (one more on every claim) and lease. Nothing (null) under shared consumption.
 */
export async function ownershipCard(stream: string, group: string): Promise<HTMLElement | null> {
  const { ownership: o } = await get<{ ownership: Ownership | null }>('ownership', { stream, group });
  if (!o) return null;
  return h(
    'section',
    { class: 'card', 'data-test': 'ownership' },
    h(
      'h2',
      {},
      `Ownership of ${o.stream} / ${o.group}`,
      h('small', {}, `exclusive · ${o.members.length} members · ${o.partitions.length} partitions · ${o.claims} claims so far`),
    ),
    o.unowned.length > 0 ? h('p', { class: 'loss' }, `No live owner: partition ${o.unowned.join(', ')}`) : null,
    table(
      ['member', 'lease left', 'owns'],
      o.members.map((m) => [m.member, lease(m.leaseLeftMs), m.owns.join(' ') || '-']),
      [1],
    ),
    table(
      ['partition', 'stream', 'owner', 'generation', 'lease left'],
      o.partitions.map((p) => [
        p.partition,
        h('a', { class: 'link', href: route('group', { stream: p.stream, group: o.group }) }, p.stream),
        p.owner ?? h('span', { class: 'loss' }, 'free'),
        p.generation,
        lease(p.leaseLeftMs),
      ]),
      [0, 3, 4],
    ),
  );
}
