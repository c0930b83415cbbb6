import type { Redis } from 'ioredis';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { type GroupBacklog, readGroupBacklogs, safeFloor } from './group-backlog.js';
import type { TrimTarget } from './retention-options.interface.js';
import { minStreamId, streamIdForAge } from '../keys/index.js';
import { type TrimFeatures, detectTrimFeatures } from './trim-features.js';
import { TRIM_MESSAGES } from './trim.messages.js';

/** How a trim went. */
export interface SafeTrimResult {
  stream: string;
  /** Entries removed (approximate trimming removes whole radix-tree nodes only, so often fewer). */
  removed: number;
  /** First id a group still needs; null when the stream has no groups or ACKED did the work. */
  floor: string | null;
  /** `acked`: Redis' own XTRIM ... ACKED; `floor`: MAXLEN/MINID kept at or above the groups' floor. */
  method: 'acked' | 'floor';
  groups: GroupBacklog[];
}

/** Options of `trimSafely`. */
export interface TrimSafelyOptions {
  /** Result of `detectTrimFeatures` to reuse; detected on every call when absent. */
  features?: TrimFeatures;
  /** Clock for `minIdAgeMs`. @default Date.now() */
  now?: number;
}

// Decides between MAXLEN and the floor atomically: with the count and the trim in one script, an
// XADD cannot slip in between and push a still-needed entry out of the newest `maxLen`.
// KEYS[1] stream; ARGV maxLen, floor → entries removed.
const TRIM_MAXLEN_ABOVE_FLOOR = `
local keep = tonumber(ARGV[1])
local needed = redis.call('XRANGE', KEYS[1], ARGV[2], '+', 'COUNT', keep + 1)
if #needed <= keep then
  return redis.call('XTRIM', KEYS[1], 'MAXLEN', '~', keep)
end
return redis.call('XTRIM', KEYS[1], 'MINID', '~', ARGV[2])`;

/**
 * Trims `stream` to `target` without removing any entry that a consumer group of the stream has
 * not acknowledged: pending entries and entries not yet delivered stay. On Redis with a correct
 * approximate `ACKED` trim (8.2.7+, 8.4.4+, 8.6+) Redis does it itself; elsewhere the trim stops at
 * the floor of `safeFloor`. Trimming is approximate (`~`): it never goes further than asked.
 *
 * A stream without consumer groups is trimmed to the target as is: there is no one to protect (a
 * group created later cannot claim entries trimmed before it existed).
 *
 * Cost: one XINFO GROUPS plus one XPENDING per group with pending entries; a `maxLen` trim may
 * also count up to `maxLen` entries from the floor inside Redis (skipped when a group's lag alone
 * proves the floor is the limit), which is worth knowing for a very large `maxLen`.
 */
export async function trimSafely(
  redis: Redis,
  stream: string,
  target: TrimTarget,
  options: TrimSafelyOptions = {},
): Promise<SafeTrimResult> {
  assertTarget(stream, target);
  const features = options.features ?? (await detectTrimFeatures(redis, stream));
  const now = options.now ?? Date.now();
  const { maxLen, minIdAgeMs } = target;
  let removed = 0;
  if (features.useAcked) {
    if (minIdAgeMs !== undefined)
      removed += Number(await redis.call('XTRIM', stream, 'MINID', '~', streamIdForAge(minIdAgeMs, now), 'ACKED'));
    if (maxLen !== undefined) removed += Number(await redis.call('XTRIM', stream, 'MAXLEN', '~', maxLen, 'ACKED'));
    return { stream, removed, floor: null, method: 'acked', groups: [] };
  }
  const groups = await readGroupBacklogs(redis, stream);
  const floor = safeFloor(groups);
  if (minIdAgeMs !== undefined) {
    const age = streamIdForAge(minIdAgeMs, now);
    removed += await redis.xtrim(stream, 'MINID', '~', floor === null ? age : minStreamId(age, floor));
  }
  if (maxLen !== undefined) {
    if (floor === null) {
      removed += await redis.xtrim(stream, 'MAXLEN', '~', maxLen);
    } else if (groups.some((g) => g.lag !== null && g.lag >= maxLen)) {
      // At least maxLen entries lie after the floor, so the floor is the nearer limit: no count needed.
      removed += await redis.xtrim(stream, 'MINID', '~', floor);
    } else {
      removed += Number(await redis.eval(TRIM_MAXLEN_ABOVE_FLOOR, 1, stream, maxLen, floor));
    }
  }
  return { stream, removed, floor, method: 'floor', groups };
}

function assertTarget(stream: string, target: TrimTarget): void {
  const { maxLen, minIdAgeMs } = target ?? {};
  const okMaxLen = maxLen === undefined || (Number.isInteger(maxLen) && maxLen >= 0);
  const okAge = minIdAgeMs === undefined || (Number.isInteger(minIdAgeMs) && minIdAgeMs > 0);
  if (!okMaxLen || !okAge || (maxLen === undefined && minIdAgeMs === undefined)) {
    throw new InvalidOptionsError(TRIM_MESSAGES.badTarget(stream, target));
  }
}
