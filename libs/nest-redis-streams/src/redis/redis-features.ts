import type { Cluster, Redis } from 'ioredis';
import { FEATURE_PROBE_KEY } from '../keys/index.js';
import { UnsupportedRedisError } from './errors/unsupported-redis.error.js';

/** What the connected Redis offers to the transport, found once when it starts listening. */
export interface RedisFeatures {
  /** `redis_version` from INFO server; '' when the server (or a proxy) did not say. */
  version: string;
  /**
   * Redis ≥ 7.0 stream counters: `XGROUP CREATE … ENTRIESREAD`, `entries-read` and `lag` in
   * XINFO GROUPS, and XAUTOCLAIM replies that name pending entries whose payload was trimmed.
   * Without them lag is reported as unknown (null) and the trim audit, which needs entries-read,
   * does nothing: undelivered entries lost to trimming are then not counted.
   */
  streamCounters: boolean;
}

/** What `probeRedisFeatures` found: the decision from the version and XAUTOCLAIM, and what was probed. */
export interface ProbedRedisFeatures extends RedisFeatures {
  /**
   * A group's read across entries trimmed before it read them sets its entries-read to that
   * entry's position in the stream (Redis 7.2+, 8.x, Valkey), so the counters forget the loss
   * once the group has read past it; Redis 7.0 only counts what it delivers, and the gap stays
   * in the counters. Where true, the trim audit must count before such a read (see
   * `auditTrimLossBeforeRead`). Probed, not read from the version: Valkey 9 reports 7.2.4. True
   * when it could not be probed (the safe side: the audit then counts before reads everywhere).
   */
  readForgetsTrimGap: boolean;
}

/**
 * The probe of `readForgetsTrimGap`, on a scratch stream that it deletes again: two entries, a
 * group created at 0 with entries-read 0, a third entry added with MAXLEN 1 (the two go), one
 * read. entries-read is then 1 where the server counts deliveries (7.0) and 3, the entry's
 * position, where it re-estimates. Only commands a consumer's ACL has (XADD's own MAXLEN, not
 * XTRIM), and the scratch key is deleted even when one of them is refused.
 * KEYS[1] scratch key → the group's entries-read after the read, or -1 when a step failed.
 */
export const PROBE_TRIM_GAP = `
redis.call('DEL', KEYS[1])
local function probe()
  for _, id in ipairs({'1-1', '2-1'}) do redis.call('XADD', KEYS[1], id, 'p', '1') end
  redis.call('XGROUP', 'CREATE', KEYS[1], 'p', '0', 'ENTRIESREAD', '0')
  redis.call('XADD', KEYS[1], 'MAXLEN', '1', '3-1', 'p', '1')
  redis.call('XREADGROUP', 'GROUP', 'p', 'p', 'COUNT', '1', 'STREAMS', KEYS[1], '>')
  local group = redis.call('XINFO', 'GROUPS', KEYS[1])[1]
  for i = 1, #group, 2 do if group[i] == 'entries-read' then return group[i + 1] end end
  return -1
end
local ok, read = pcall(probe)
redis.call('DEL', KEYS[1])
if ok then return read end
return -1`;

/** Oldest Redis the transport works with: the reclaimer needs XAUTOCLAIM (6.2). */
export const MIN_REDIS_VERSION = '6.2';

/** Messages of the probe: each names the server's version, what is missing and what to do. */
export const REDIS_FEATURE_MESSAGES = {
  tooOld: (version: string) =>
    `Redis ${MIN_REDIS_VERSION} or newer is required (XAUTOCLAIM, used to take over the entries of dead consumers); ` +
    `this server is ${version}. Upgrade Redis.`,
  noXautoclaim: (version: string) =>
    `This Redis server (${version || 'version unknown'}) does not offer XAUTOCLAIM, which the reclaimer needs to take ` +
    'over the entries of dead consumers: it was renamed or disabled (rename-command), or a proxy does not pass it. ' +
    `Allow XAUTOCLAIM (Redis ${MIN_REDIS_VERSION} or newer).`,
} as const;

/** Major and minor of a version string ('7.0.15' → [7, 0]); null when it does not start with them. */
export function parseRedisVersion(version: string): [major: number, minor: number] | null {
  const match = /^(\d+)\.(\d+)/.exec(version.trim());
  return match ? [Number(match[1]), Number(match[2])] : null;
}

function atLeast(version: [number, number], [major, minor]: [number, number]): boolean {
  return version[0] > major || (version[0] === major && version[1] >= minor);
}

/**
 * Decides from what the server said. `hasXautoclaim` is null when the server could not be asked
 * (COMMAND refused, e.g. by a proxy): the version decides alone then. An unknown version with an
 * XAUTOCLAIM that answers is accepted, as Redis-compatible servers report versions of their own.
 * @throws UnsupportedRedisError when XAUTOCLAIM is missing or the version is older than 6.2.
 */
export function decideRedisFeatures(version: string, hasXautoclaim: boolean | null): RedisFeatures {
  const parsed = parseRedisVersion(version);
  const [minMajor, minMinor] = parseRedisVersion(MIN_REDIS_VERSION)!;
  if (parsed && !atLeast(parsed, [minMajor, minMinor])) throw new UnsupportedRedisError(REDIS_FEATURE_MESSAGES.tooOld(version));
  if (hasXautoclaim === false) throw new UnsupportedRedisError(REDIS_FEATURE_MESSAGES.noXautoclaim(version));
  // Without a version, the 7.0 counters are assumed: the scripts fall back where they are missing.
  return { version, streamCounters: parsed ? atLeast(parsed, [7, 0]) : true };
}

/**
 * Asks the server once for its version (INFO server) and whether XAUTOCLAIM exists (COMMAND INFO
 * answers nil for a command that is unknown or renamed away), then decides with
 * `decideRedisFeatures`. Call it before the first group is created, so an old server fails with
 * a message naming the minimum version instead of a Lua or syntax error from deep inside.
 * @throws UnsupportedRedisError as `decideRedisFeatures`; errors of the connection itself.
 */
export async function probeRedisFeatures(redis: Redis | Cluster, probeKey = FEATURE_PROBE_KEY): Promise<ProbedRedisFeatures> {
  const info = await redis.info('server');
  const version = /^redis_version:(.+)$/m.exec(info)?.[1]?.trim() ?? '';
  let hasXautoclaim: boolean | null;
  try {
    const [description] = (await redis.call('COMMAND', 'INFO', 'XAUTOCLAIM')) as unknown[];
    hasXautoclaim = Array.isArray(description);
  } catch {
    hasXautoclaim = null;
  }
  const features = decideRedisFeatures(version, hasXautoclaim);
  return { ...features, readForgetsTrimGap: features.streamCounters ? await probeTrimGap(redis, probeKey) : false };
}

/**
 * Runs PROBE_TRIM_GAP on `key` (pass one the connection's ACL may write, in the slot it wants, e.g.
 * beside a stream's trim-audit hash). Without 7.0's counters there is no entries-read to forget.
 */
export async function probeTrimGap(redis: Redis | Cluster, key: string): Promise<boolean> {
  try {
    return Number(await redis.eval(PROBE_TRIM_GAP, 1, key)) !== 1;
  } catch {
    // Refused (ACL, read-only replica, a proxy without EVAL): assume the newer behaviour.
    return true;
  }
}
