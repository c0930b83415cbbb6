import { BUMP_CLAIM_EPOCH } from './claim-epoch.js';
import { fenced } from './fence-check.js';

// Scripts of exclusive partition ownership. Every time comes from Redis' TIME, so the clocks of
// the instances never need to agree. An owner hash (owner, gen, until) lives beside its partition
// stream, in the same hash slot, so fenced writes stay single-slot scripts on a cluster.

/**
 * KEYS[1] members (sorted set: member → lease end); ARGV[1] member, ARGV[2] lease ms,
 * ARGV[3] '1' heartbeat / '0' leave → { now (ms), live members sorted by name }.
 * Members whose lease ran out are dropped first: a dead instance leaves by itself.
 */
export const OWN_HEARTBEAT = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if ARGV[3] == '1' then redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
else redis.call('ZREM', KEYS[1], ARGV[1]) end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 10)
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
table.sort(members)
return {now, members}`;

/**
 * KEYS[1] owner hash; ARGV[1] member, ARGV[2] lease ms, ARGV[3] the generation this member holds
 * ('' to claim) → { 1 owned / 0 not, generation, owner }.
 * Renewing keeps the generation (nobody else owned it in between, whatever the clock says);
 * claiming takes a free or expired partition with generation + 1, which fences the previous owner.
 */
export const OWN_CLAIM = `
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local row = redis.call('HMGET', KEYS[1], 'owner', 'gen', 'until')
local gen = tonumber(row[2] or '0')
if ARGV[3] ~= '' then
  if row[1] == ARGV[1] and row[2] == ARGV[3] then
    redis.call('HSET', KEYS[1], 'until', now + tonumber(ARGV[2]))
    return {1, gen, ARGV[1]}
  end
  return {0, gen, row[1] or ''}
end
if row[1] and row[1] ~= '' and tonumber(row[3] or '0') >= now then return {0, gen, row[1]} end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'gen', gen + 1, 'until', now + tonumber(ARGV[2]))
return {1, gen + 1, ARGV[1]}`;

/** KEYS[1] owner hash; ARGV[1] member, ARGV[2] generation → 1 released, 0 not ours any more. */
export const OWN_RELEASE = `
local row = redis.call('HMGET', KEYS[1], 'owner', 'gen')
if row[1] ~= ARGV[1] or row[2] ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], 'owner', '', 'until', 0)
return 1`;

/**
 * Fenced XREADGROUP (no BLOCK: scripts never block). KEYS[1] stream, KEYS[2] owner hash;
 * ARGV member, generation, group, consumer, count →
 * false when fenced, { entries } when some were read, { {}, last id of the stream } when none,
 * so the caller can wait with a plain XREAD BLOCK after that id (which takes nothing from the group).
 */
export const OWN_READ = fenced(
  `
local read = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'STREAMS', KEYS[1], '>')
if read then return {read[1][2]} end
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
return {{}, last and last[1] or '0-0'}`,
  'false',
);

/**
 * Fenced XAUTOCLAIM that raises the claim epoch when it took anything (see claim-epoch.ts).
 * KEYS[1] stream, KEYS[2] claim epoch hash, KEYS[3] owner hash; ARGV member, generation, group,
 * consumer, min idle ms, cursor, count, '1' for JUSTID → false when fenced, else XAUTOCLAIM's reply.
 */
export const OWN_AUTOCLAIM = fenced(
  `${BUMP_CLAIM_EPOCH}
local args = {'XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5]}
if ARGV[6] == '1' then args[#args + 1] = 'JUSTID' end
local reply = redis.call(unpack(args))
if #reply[2] > 0 or #(reply[3] or {}) > 0 then bumpClaimEpoch(KEYS[2]) end
return reply`,
  'false',
);
