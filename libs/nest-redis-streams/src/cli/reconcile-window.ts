import { MAX_DATE_MS } from '../time-text.js';
import { UsageError } from './errors/usage.error.js';

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A `--since`/`--until` value as a Date: `now`, a duration ago (`15m`, `2h`, `7d`), a stream id
 * (`1700000000000-0`, counted by its time), milliseconds since the epoch or an ISO date.
 */
export function parseWhen(value: string, option: string, now: number): Date {
  const text = value.trim();
  const duration = /^(\d+)([smhd])$/.exec(text);
  let ms: number;
  if (text === 'now') ms = now;
  else if (duration) ms = now - Number(duration[1]) * UNIT_MS[duration[2]];
  else if (/^\d+(-\d+)?$/.test(text)) ms = Number(text.split('-')[0]);
  else ms = Date.parse(text);
  // Past what a Date holds the window could not be printed or compared.
  if (!Number.isSafeInteger(ms) || ms < 0 || ms > MAX_DATE_MS) {
    throw new UsageError(
      `--${option} must be a time (2024-05-01T12:00:00Z or ms since the epoch), a stream id (1700000000000-0), a duration ago (15m, 2h, 7d) or "now"; got "${value}".`,
    );
  }
  return new Date(ms);
}

/** The window `[since, until)`; since defaults to 24 hours ago and until to now. */
export function reconcileWindow(
  since: string | undefined,
  until: string | undefined,
  now = Date.now(),
): { from: Date; to: Date } {
  const from = parseWhen(since ?? '24h', 'since', now);
  const to = parseWhen(until ?? 'now', 'until', now);
  if (!(from < to)) {
    throw new UsageError(`--since (${from.toISOString()}) must be before --until (${to.toISOString()}).`);
  }
  return { from, to };
}
