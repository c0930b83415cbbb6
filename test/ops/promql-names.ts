import { METRIC_DEFINITIONS, METRICS_DEFAULTS } from 'nest-redis-streams';
import { OUTBOX_METRIC_DEFINITIONS } from 'nest-redis-streams/database';
import { seriesNames } from '../../libs/nest-redis-streams/src/metrics/metrics.constants.js';

/** Every series name the library exports under the default prefix (histograms with their suffixes), the outbox relay's too. */
export function exportedSeriesNames(prefix = METRICS_DEFAULTS.prefix): Set<string> {
  return new Set(
    [...Object.values(METRIC_DEFINITIONS), ...Object.values(OUTBOX_METRIC_DEFINITIONS)].flatMap((definition) =>
      seriesNames(prefix, definition),
    ),
  );
}

const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
]);

/**
 * The metric names a PromQL expression selects. Not a parser: it drops what cannot be a metric
 * name (strings, label matchers, ranges, grouping clauses, Grafana variables) and keeps the
 * identifiers that are not functions, aggregations or keywords.
 */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    // Grafana's label_values(selector, label): the second argument is a label, not a metric.
    .replace(/label_values\(([^,]*),\s*\w+\s*\)/g, '$1')
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\$\{[^}]*\}|\$\w+/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const match of stripped.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const rest = stripped.slice(match.index + match[0].length);
    if (/^\s*\(/.test(rest) || KEYWORDS.has(match[0])) continue;
    // Exponents of numbers (1e3) and duration units (5m) follow a digit.
    if (match.index > 0 && /[0-9.]/.test(stripped[match.index - 1])) continue;
    names.add(match[0]);
  }
  return [...names];
}
