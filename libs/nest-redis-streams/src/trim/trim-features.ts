import type { Redis } from 'ioredis';

/** What this Redis offers for trimming, found by asking it rather than assuming a version. */
export interface TrimFeatures {
  /** `redis_version` from INFO server ('' when INFO did not say). */
  redisVersion: string;
  /** XTRIM accepts the ACKED option (Redis 8.2+). */
  ackedOption: boolean;
  /**
   * ACKED may be combined with `~`: the combination deleted unacknowledged entries until 8.2.7,
   * 8.4.4 and 8.6, so it is used only when the option exists and the version is past the fix.
   */
  useAcked: boolean;
}

/** First releases of each line that carry the fix for approximate (`~`) ACKED trimming. */
const ACKED_APPROX_FIXED: ReadonlyArray<[major: number, minor: number, patch: number]> = [
  [8, 2, 7],
  [8, 4, 4],
];
const ACKED_APPROX_FIXED_FROM: [number, number] = [8, 6];

/** True when approximate ACKED trimming is known to be correct in this Redis version. */
export function isAckedApproxFixed(version: string): boolean {
  const match = /^(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!match) return false;
  const [major, minor, patch] = match.slice(1).map(Number);
  const [fromMajor, fromMinor] = ACKED_APPROX_FIXED_FROM;
  if (major > fromMajor || (major === fromMajor && minor >= fromMinor)) return true;
  // Only the patched lines are trusted; any other 8.x before 8.6 (8.3, 8.5 previews) is not.
  return ACKED_APPROX_FIXED.some(([ma, mi, pa]) => major === ma && minor === mi && patch >= pa);
}

/**
 * Probes XTRIM's ACKED option with `XTRIM <stream> MINID 0 ACKED`: Redis parses the options
 * before it looks at the key, so an older server answers with a syntax error, and MINID 0 removes
 * nothing on a newer one. The stream itself is the probe key so that it lands on the right
 * Cluster shard.
 */
export async function detectTrimFeatures(redis: Redis, stream: string): Promise<TrimFeatures> {
  const info = await redis.info('server');
  const redisVersion = /^redis_version:(.+)$/m.exec(info)?.[1]?.trim() ?? '';
  let ackedOption: boolean;
  try {
    await redis.call('XTRIM', stream, 'MINID', '0', 'ACKED');
    ackedOption = true;
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // WRONGTYPE comes after the options were parsed, so the option exists.
    if (/syntax error/i.test(message)) ackedOption = false;
    else if (message.startsWith('WRONGTYPE')) ackedOption = true;
    else throw err;
  }
  return { redisVersion, ackedOption, useAcked: ackedOption && isAckedApproxFixed(redisVersion) };
}
