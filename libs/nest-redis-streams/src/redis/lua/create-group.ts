import { BUMP_CLAIM_EPOCH } from './claim-epoch.js';

/**
 * KEYS[1] stream, KEYS[2] the group's claim epoch; ARGV group, start id, and optionally '0' to leave ENTRIESREAD out →
 * XGROUP CREATE ... MKSTREAM with ENTRIESREAD set, so the group's entries-read counter is exact
 * from the start (Redis leaves it unknown otherwise until the group catches up, and the trim audit
 * needs it). ENTRIESREAD exists from Redis 7.0 on: when the server refuses it (6.2 answers with a
 * syntax or arity error, before anything is written) the group is created without it, so the
 * same script works on both; `probeRedisFeatures` tells the caller in advance and may pass '0'.
 * Errors (BUSYGROUP, WRONGTYPE) are returned as errors. A group created raises its claim epoch
 * (claim-epoch.ts): one created again after a deletion may hand entries an old owner still runs
 * to another consumer, and that owner's ack must then check.
 */
/** The commands the script runs: named in the fix when Redis refuses one of them. */
export const CREATE_GROUP_COMMANDS = ['exists', 'xinfo|stream', 'xgroup|create', 'hexists', 'hincrby', 'hset', 'time'] as const;

export const CREATE_GROUP = `${BUMP_CLAIM_EPOCH}
local function create()
local plain = {'XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM'}
if ARGV[3] == '0' or (ARGV[2] ~= '$' and ARGV[2] ~= '0') then
  local reply = redis.pcall(unpack(plain))
  if type(reply) == 'table' and reply.err then return redis.error_reply(reply.err) end
  return reply
end
local added, length = 0, 0
if redis.call('EXISTS', KEYS[1]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then added = info[i + 1] elseif info[i] == 'length' then length = info[i + 1] end
  end
end
local read = added
if ARGV[2] == '0' then read = added - length end
local reply = redis.pcall('XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM', 'ENTRIESREAD', read)
if type(reply) == 'table' and reply.err and not string.find(reply.err, '^BUSYGROUP') then
  -- A server without ENTRIESREAD fails on parsing, before it writes anything: retrying is safe.
  reply = redis.pcall(unpack(plain))
end
if type(reply) == 'table' and reply.err then return redis.error_reply(reply.err) end
return reply
end
local reply = create()
if type(reply) == 'table' and reply.err then return reply end
bumpClaimEpoch(KEYS[2])
return reply`;
