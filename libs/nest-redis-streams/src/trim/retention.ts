import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import type { StreamRetention } from './retention-options.interface.js';
import { streamIdForAge } from '../keys/index.js';
import { TRIM_MESSAGES } from './trim.messages.js';

/**
 * The trim arguments of an XADD for a plain retention (`MAXLEN ~ n` or `MINID ~ <now-age>-0`);
 * none for a safe one, which is trimmed periodically instead.
 */
export function xaddTrimArgs(retention: StreamRetention | undefined, now = Date.now()): Array<string | number> {
  if (!retention || retention.safe || retention.acked) return [];
  if (retention.maxLen !== undefined) return ['MAXLEN', '~', retention.maxLen];
  if (retention.minIdAgeMs !== undefined) return ['MINID', '~', streamIdForAge(retention.minIdAgeMs, now)];
  return [];
}

/** Checks one retention: exactly one of maxLen/minIdAgeMs (XADD takes one), a positive interval. */
export function assertRetention(retention: StreamRetention, where: string): void {
  const { maxLen, minIdAgeMs, intervalMs, safe, acked } = retention;
  if (acked !== undefined && acked !== false) {
    if (acked !== true || maxLen !== undefined || minIdAgeMs !== undefined || safe !== undefined)
      throw new InvalidOptionsError(TRIM_MESSAGES.badAckedRetention(where, retention));
  }
  const okMaxLen = maxLen === undefined || (Number.isInteger(maxLen) && maxLen >= 0);
  const okAge = minIdAgeMs === undefined || (Number.isInteger(minIdAgeMs) && minIdAgeMs > 0);
  const okInterval = intervalMs === undefined || (Number.isInteger(intervalMs) && intervalMs > 0);
  const oneTarget = acked === true || (maxLen === undefined) !== (minIdAgeMs === undefined);
  if (!okMaxLen || !okAge || !okInterval || !oneTarget || (safe !== undefined && typeof safe !== 'boolean')) {
    throw new InvalidOptionsError(TRIM_MESSAGES.badRetention(where, retention));
  }
}
