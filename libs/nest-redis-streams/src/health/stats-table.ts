import type { StreamStats } from './stream-stats.js';

type Column = { header: string; cell: (row: StreamStats) => string; right: boolean };

const COLUMNS: Column[] = [
  { header: 'stream', cell: (r) => r.stream, right: false },
  { header: 'group', cell: (r) => r.group, right: false },
  { header: 'pending', cell: (r) => String(r.pending), right: true },
  { header: 'oldest idle', cell: (r) => formatDuration(r.oldestIdleMs), right: true },
  { header: 'lag', cell: (r) => (r.lag === null ? 'unknown' : String(r.lag)), right: true },
  // The group's own dead letters; the shared stream's length when it was too long to count.
  {
    header: 'dead letters',
    cell: (r) => (r.groupDeadLetters === null ? `${r.deadLetters} (all groups)` : String(r.groupDeadLetters)),
    right: true,
  },
  { header: 'consumers', cell: (r) => String(r.consumers), right: true },
];

const GAP = '  ';

/**
 * Renders stream figures as a fixed-width table for a terminal (names left, numbers right):
 *
 * ```text
 * stream  group    pending  oldest idle  lag  dead letters  consumers
 * ------  -------  -------  -----------  ---  ------------  ---------
 * orders  billing        3        1.2 s    0             0          2
 * ```
 */
export function formatStatsTable(rows: readonly StreamStats[]): string {
  const cells = rows.map((row) => COLUMNS.map((c) => c.cell(row)));
  const widths = COLUMNS.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i].length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (COLUMNS[i].right ? v.padStart(widths[i]) : v.padEnd(widths[i])))
      .join(GAP)
      .trimEnd();
  const lines = [line(COLUMNS.map((c) => c.header)), widths.map((w) => '-'.repeat(w)).join(GAP), ...cells.map(line)];
  if (rows.length === 0) lines.push('(no streams)');
  return lines.join('\n');
}

/** `850 ms`, `12.3 s`, `4 min 5 s`, `2 h 10 min`: exact enough to read at a glance. */
export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.floor((ms % 60_000) / 1_000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}
