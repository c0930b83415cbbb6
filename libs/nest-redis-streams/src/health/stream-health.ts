import { THRESHOLD_DEFAULTS, HEALTH_MESSAGES } from './health.constants.js';
import type { ReadinessOptions, StreamHealthThresholds } from './health-options.interface.js';
import type { StreamStats } from './stream-stats.js';

/** Health of one stream/group: `degraded` still passes a Terminus check, `down` fails it. */
export type StreamHealthStatus = 'up' | 'degraded' | 'down';

/** Thresholds with every default applied. */
export type ResolvedThresholds = Required<StreamHealthThresholds>;

/** The verdict on one stream/group and why. */
export interface StreamVerdict {
  /** Worst status over all thresholds. */
  status: StreamHealthStatus;
  /** One sentence per threshold exceeded, naming stream, group, figure and limit. */
  reasons: string[];
}

const THRESHOLD_KEYS = Object.keys(THRESHOLD_DEFAULTS) as Array<keyof ResolvedThresholds>;

/**
 * Thresholds for one stream/group: the first matching override (by stream key or pattern, and
 * group when it names one), then the general options, then the defaults; field by field.
 */
export function resolveThresholds(options: ReadinessOptions, stream: string, pattern: string, group: string): ResolvedThresholds {
  const override = options.overrides?.find(
    (o) => (o.stream === stream || o.stream === pattern) && (o.group === undefined || o.group === group),
  );
  const resolved = { ...THRESHOLD_DEFAULTS };
  for (const key of THRESHOLD_KEYS) resolved[key] = override?.[key] ?? options[key] ?? THRESHOLD_DEFAULTS[key];
  return resolved;
}

/** Compares one stream/group's figures with its thresholds. A null lag (unknown) never fails. */
export function evaluateStreamStats(stats: StreamStats, limits: ResolvedThresholds): StreamVerdict {
  const { stream, group } = stats;
  const down: string[] = [];
  const degraded: string[] = [];
  const over = (what: string, figure: number, option: keyof ResolvedThresholds, unit = '') =>
    HEALTH_MESSAGES.overLimit(stream, group, what, `${figure}${unit}`, option, `${limits[option]}${unit}`);
  if (stats.oldestIdleMs > limits.maxOldestIdleMs) {
    down.push(over('the oldest pending idle time', stats.oldestIdleMs, 'maxOldestIdleMs', ' ms'));
  }
  if (stats.pending > limits.maxPending) down.push(over('the pending count', stats.pending, 'maxPending'));
  if (stats.lag !== null && stats.lag > limits.maxLag)
    down.push(over('the lag (entries not yet delivered)', stats.lag, 'maxLag'));
  // The dead-letter stream is shared by the groups of a stream: judge each group by its own records
  // when they were counted, by the whole stream's length only when it was too long to count.
  if (stats.groupDeadLetters !== null && stats.groupDeadLetters > limits.maxDeadLetters) {
    degraded.push(
      over(
        `the number of its entries in dead-letter stream "${stats.deadLetterStream}"`,
        stats.groupDeadLetters,
        'maxDeadLetters',
      ),
    );
  } else if (stats.groupDeadLetters === null && stats.deadLetters > limits.maxDeadLetters) {
    degraded.push(
      over(
        `the length of dead-letter stream "${stats.deadLetterStream}" (all groups; too long to count per group)`,
        stats.deadLetters,
        'maxDeadLetters',
      ),
    );
  }
  const status: StreamHealthStatus = down.length > 0 ? 'down' : degraded.length > 0 ? 'degraded' : 'up';
  return { status, reasons: [...down, ...degraded] };
}
