/** The latest time a JavaScript `Date` holds: 8.64e15 ms since the epoch (year 275760). */
export const MAX_DATE_MS = 8.64e15;

/**
 * A time as an ISO date, for output: milliseconds since the epoch, or a stream id (its time part).
 * A stream id's time goes up to 2^64 - 1 ms (`99999999999999999-0` is a valid id), far past what a
 * `Date` holds, and `toISOString()` throws on such a date: those times are printed as their
 * milliseconds instead (an id's digits exactly as they are, not rounded through a number).
 */
export function timeText(time: number | string): string {
  const digits = typeof time === 'string' ? time.split('-')[0] : String(time);
  const ms = Number(digits);
  return Number.isFinite(ms) && Math.abs(ms) <= MAX_DATE_MS ? new Date(ms).toISOString() : digits;
}

/** A time in a sentence: an ISO date when a Date can hold it, else "<ms> ms since the epoch". */
export function timePhrase(ms: number): string {
  const text = timeText(ms);
  return text.includes(':') ? text : `${text} ms since the epoch`;
}
