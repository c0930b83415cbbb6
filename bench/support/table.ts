// The results table: printed to the console and written to bench/results.md.

export interface ResultRow {
  row: string;
  what: string;
  setting: string;
  result: string;
  ratio: string;
  target: string;
  /** true/false when the row has a target, undefined when it is informational. */
  met?: boolean;
}

const HEADER = ['#', 'measurement', 'setting', 'result', 'ratio vs baseline', 'target', 'met?'];

export function renderTable(rows: ResultRow[]): string {
  const cells = rows.map((r) => [
    r.row,
    r.what,
    r.setting,
    r.result,
    r.ratio,
    r.target,
    r.met === undefined ? '' : r.met ? 'yes' : 'NO',
  ]);
  const widths = HEADER.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (values: string[]) => `| ${values.map((v, i) => v.padEnd(widths[i])).join(' | ')} |`;
  return [line(HEADER), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}
