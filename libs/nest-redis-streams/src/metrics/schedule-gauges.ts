import type { Redis } from 'ioredis';
import { summarizeSchedule } from '../schedule/index.js';
import type { MetricInstruments } from './metric-instruments.js';

/**
 * The schedule gauges of each stream: entries waiting and how long the first is overdue. One
 * script call per stream (ZCARD and the first due time), no entry read. A stream whose schedule
 * cannot be read (an ACL without its keys) loses its figures rather than keep stale ones, and
 * spoils no other gauge.
 */
export async function sampleSchedules(redis: Redis, streams: readonly string[], m: MetricInstruments): Promise<void> {
  const unique = [...new Set(streams)];
  const summaries = await Promise.allSettled(unique.map((stream) => summarizeSchedule(redis, stream, 0)));
  summaries.forEach((summary, i) => {
    const labels = { stream: unique[i] };
    if (summary.status === 'rejected') {
      m.scheduledEntries.remove(labels);
      m.scheduledOverdue.remove(labels);
      return;
    }
    m.scheduledEntries.set(labels, summary.value.count);
    m.scheduledOverdue.set(labels, summary.value.oldestOverdueMs / 1_000);
  });
}
