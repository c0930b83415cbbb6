const GAP = '  ';

/** A fixed-width table: headers, a rule, rows; columns listed in `right` are right-aligned. */
export function formatTable(headers: string[], rows: string[][], right: ReadonlySet<number> = new Set()): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (right.has(i) ? (v ?? '').padStart(widths[i]) : (v ?? '').padEnd(widths[i])))
      .join(GAP)
      .trimEnd();
  const lines = [line(headers), widths.map((w) => '-'.repeat(w)).join(GAP), ...rows.map(line)];
  if (rows.length === 0) lines.push('(none)');
  return lines.join('\n');
}

/**
 * Control characters in a value would move a terminal's cursor or change its colours: show them
 * escaped. So is U+FFFD, which stands for bytes that were not UTF-8 (replies are decoded as UTF-8):
 * shown as a glyph, two different binary event ids would look alike.
 */
export function printable(value: string, max = 80): string {
  const safe = value.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f-\u009f\ufffd]/g,
    (c) => (c === '\ufffd' ? '\\ufffd' : `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`),
  );
  return safe.length > max ? `${safe.slice(0, max - 1)}…` : safe;
}
