import type { Redis } from 'ioredis';
import { LeanScript } from '../redis/lean-script.js';
import { REDIS_NOW_MS } from '../redis/lua/redis-now.js';

/**
 * One live canary per stream and failure group, fleet-wide: a hash (see `canaryClaimKey`) holding
 * the live run, its lease (ms on Redis' clock, so no instance's clock decides) and the dead-letter
 * id the run reads up to. `open` stays 1 until a run ends with a decision (done, stopped by its
 * threshold): a run that did not (its process died, Redis failed it, its caller ended it) leaves
 * its bound to the run that takes over, so the letters it re-drove and that failed again are not
 * read again. A decided run frees the pair: the next run reads up to the newest letter again (after
 * a fix, the ones that failed again are due too).
 */

/** What a claim found: a live run (refused), or the claim is this run's, resuming an undecided run or fresh. */
export type CanaryClaim = { live: string; leaseLeftMs: number } | { live: null; resumes: string | null; upTo: string | null };

// KEYS[1] claim hash; ARGV[1] run id, ARGV[2] lease ms, ARGV[3] the newest dead-letter id now ('' none),
// ARGV[4] seconds to keep the hash → {'live', run, ms left} | {'claimed', run resumed or '', bound or ''}.
const CLAIM = new LeanScript<[string, string, string | number]>(
  `${REDIS_NOW_MS}
local held = redis.call('HMGET', KEYS[1], 'run', 'until', 'open', 'upTo')
if held[1] and held[3] == '1' and tonumber(held[2] or '0') > now then
  return {'live', held[1], tonumber(held[2] or '0') - now}
end
local resumes, upTo = '', ARGV[3]
if held[1] and held[3] == '1' then resumes, upTo = held[1], held[4] or '' end
redis.call('HSET', KEYS[1], 'run', ARGV[1], 'until', string.format('%d', now + tonumber(ARGV[2])), 'open', '1', 'upTo', upTo)
redis.call('EXPIRE', KEYS[1], ARGV[4])
return {'claimed', resumes, upTo}`,
  1,
);

// KEYS[1] claim hash; ARGV[1] run id, ARGV[2] lease ms → '' renewed, else the run holding it now.
const RENEW = new LeanScript<string>(
  `${REDIS_NOW_MS}
local run = redis.call('HGET', KEYS[1], 'run')
if run ~= ARGV[1] then return run or '' end
redis.call('HSET', KEYS[1], 'until', string.format('%d', now + tonumber(ARGV[2])))
return ''`,
  1,
);

// KEYS[1] claim hash; ARGV[1] run id, ARGV[2] '1' decided (frees the pair) or '0' (lease ends now,
// the bound stays for the run that takes over) → 1, or 0 when another run holds it.
const RELEASE = new LeanScript<number>(
  `if redis.call('HGET', KEYS[1], 'run') ~= ARGV[1] then return 0 end
if ARGV[2] == '1' then redis.call('HSET', KEYS[1], 'open', '0') else redis.call('HSET', KEYS[1], 'until', '0') end
return 1`,
  1,
);

/** Claims the pair for `runId` unless a live run holds it; `newest` is the bound of a fresh run. */
export async function claimCanary(
  redis: Redis,
  key: string,
  runId: string,
  options: { leaseMs: number; newest: string | null; keepSeconds: number },
): Promise<CanaryClaim> {
  const [kind, run, third] = await CLAIM.run(redis, [key, runId, options.leaseMs, options.newest ?? '', options.keepSeconds]);
  if (kind === 'live') return { live: run, leaseLeftMs: Number(third) };
  return { live: null, resumes: run === '' ? null : run, upTo: third === '' ? null : String(third) };
}

/** Extends the lease of `runId`; resolves with the run that holds the pair instead, or null when renewed. */
export async function renewCanary(redis: Redis, key: string, runId: string, leaseMs: number): Promise<string | null> {
  const holder = await RENEW.run(redis, [key, runId, leaseMs]);
  return holder === '' ? null : holder;
}

/** Ends `runId`'s claim: `decided` frees the pair, otherwise the next run takes over its bound at once. */
export async function releaseCanary(redis: Redis, key: string, runId: string, decided: boolean): Promise<void> {
  await RELEASE.run(redis, [key, runId, decided ? '1' : '0']);
}
