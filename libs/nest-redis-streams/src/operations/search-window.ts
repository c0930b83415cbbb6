import { compareStreamIds } from '../keys/index.js';
import { OperationError } from './errors/operation.error.js';
import { MAX_SEQ, parseStreamId, parseTime } from './stream-position.js';

/** The ids a search reads between, both inclusive (`-` and `+` for the stream's ends). */
export interface SearchWindow {
  start: string;
  end: string;
}

const DURATION = /^(\d{1,9})(ms|s|m|h|d|w)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * One end of the window: a stream id (`1700000000000-3`), milliseconds since the epoch, an ISO date,
 * or a duration before `now` (`15m`, `2h`, `7d`); a time starts (or ends) at that millisecond's
 * first (or last) id. Anything else is refused naming the value.
 */
export function searchBound(value: string | number, side: 'since' | 'until', now = Date.now()): string {
  const text = String(value).trim();
  if (/^\d{1,20}-\d{1,20}$/.test(text)) return parseStreamId(text, side);
  const duration = DURATION.exec(text);
  let ms: number;
  if (duration) ms = Math.max(0, now - Number(duration[1]) * UNIT_MS[duration[2]]);
  else {
    try {
      ms = parseTime(value);
    } catch {
      throw new OperationError(
        'bad-request',
        `${side} must be a duration before now (15m, 2h, 7d), an ISO date (2026-05-01T12:00:00Z), milliseconds since ` +
          `the epoch or a stream id (1700000000000-0); got ${JSON.stringify(text.slice(0, 80))}.`,
      );
    }
  }
  return side === 'since' ? `${ms}-0` : `${ms}-${MAX_SEQ}`;
}

/** The window of `since`/`until` (either may be absent); refused when it ends before it starts. */
export function searchWindow(since?: string | number, until?: string | number, now = Date.now()): SearchWindow {
  const start = since === undefined || since === '' ? '-' : searchBound(since, 'since', now);
  const end = until === undefined || until === '' ? '+' : searchBound(until, 'until', now);
  if (start !== '-' && end !== '+' && compareStreamIds(start, end) > 0)
    throw new OperationError('bad-request', `The search window ends (until ${end}) before it starts (since ${start}).`);
  return { start, end };
}
