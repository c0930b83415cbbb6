import { escapeControls } from './output.js';

const GAP = '  ';

/**
 * A fixed-width table: headers, a rule, rows; columns listed in `right` are right-aligned. Every
 * cell is escaped (a control character in a name would move the cursor and break the columns).
 */
export function formatTable(headers: string[], rows: string[][], right: ReadonlySet<number> = new Set()): string {
  const cells = rows.map((r) => headers.map((_, i) => escapeControls(r[i] ?? '')));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i].length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (right.has(i) ? v.padStart(widths[i]) : v.padEnd(widths[i])))
      .join(GAP)
      .trimEnd();
  const lines = [line(headers), widths.map((w) => '-'.repeat(w)).join(GAP), ...cells.map(line)];
  if (rows.length === 0) lines.push('(none)');
  return lines.join('\n');
}
