import type { Redis } from 'ioredis';
import { readBlockedKeys, totalBlocked } from '../operations/blocked-keys.js';
import type { MetricInstruments } from './metric-instruments.js';

/**
 * The blocked-key gauges of each stream/group: keys blocked, entries held behind them and how
 * long the oldest block lasts. One HGETALL per group (plus one pipeline of XLENs when a key is
 * blocked), all groups in parallel. A group whose keys cannot be read (an ACL without them) loses
 * its figures rather than keep stale ones, and spoils no other gauge.
 */
export async function sampleBlockedKeys(
  redis: Redis,
  targets: ReadonlyArray<{ stream: string; group: string }>,
  m: MetricInstruments,
  now = Date.now(),
): Promise<void> {
  const unique = [...new Map(targets.map((t) => [JSON.stringify([t.stream, t.group]), t])).values()];
  const read = await Promise.allSettled(unique.map(({ stream, group }) => readBlockedKeys(redis, stream, group)));
  read.forEach((blocked, i) => {
    const labels = { stream: unique[i].stream, group: unique[i].group };
    if (blocked.status === 'rejected') {
      for (const gauge of [m.blockedKeys, m.blockedEntries, m.blockedOldest]) gauge.remove(labels);
      return;
    }
    const totals = totalBlocked(blocked.value);
    m.blockedKeys.set(labels, totals.keys);
    m.blockedEntries.set(labels, totals.waiting);
    m.blockedOldest.set(labels, totals.oldestSince === null ? 0 : Math.max(0, now - totals.oldestSince) / 1_000);
  });
}
