import { CLAIM_OWNED_BODY } from './claim-if-owned.js';
import { REDIS_NOW_MS } from './redis-now.js';

/**
 * A failed entry waits for its retry (see consumer/delivery-policy.ts): the claim of
 * claim-if-owned.ts, which backdates the entry's idle time so that any reclaimer takes it once the
 * back-off is over, plus the record of what really happened, which operators read instead of the
 * backdated idle time (see recovery/retry-waits.ts).
 *
 * KEYS[1] stream, KEYS[2] retry-waits hash, KEYS[3] retry-checks sorted set
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] idle time to set (ms), ARGV[4] delivery count to set
 *         (-1 keeps it), ARGV[5] back-off (ms), ARGV[6] records' time to live (ms),
 *         ARGV[7] how many old records to check, ARGV[8] tolerance (ms), ARGV[9..] ids
 * Returns claim-if-owned's reply.
 *
 * A record (`<backdated delivery time>:<failed at>:<due at>`, Redis' clock) holds only while the
 * entry's PEL delivery time is still the backdated one: any later claim, read or ack makes it
 * stale. Stale records are removed here, a few of the oldest-checked per call (a record still
 * valid is checked again later), so the hash holds about the entries waiting now; both keys
 * expire when no retry is written for their time to live. The records are for operators only:
 * their writes are pcalls, so a refused one (a full Redis: `noeviction`) never fails the retry,
 * whose claim is already done by then.
 */
export const RETRY_IF_OWNED = `
local backoff = tonumber(table.remove(ARGV, 5))
local ttl = table.remove(ARGV, 5)
local checks = tonumber(table.remove(ARGV, 5))
local tolerance = tonumber(table.remove(ARGV, 5))
${CLAIM_OWNED_BODY}
${REDIS_NOW_MS}
local backdated = now - tonumber(ARGV[3])
for _, id in ipairs(owned) do
  if claimed[id] then
    redis.pcall('HSET', KEYS[2], id, backdated .. ':' .. now .. ':' .. (now + backoff))
    redis.pcall('ZADD', KEYS[3], now + backoff, id)
  end
end
local recheck = now + 60000
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, checks)) do
  local record = redis.call('HGET', KEYS[2], id)
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)[1]
  local at = record and tonumber(string.match(record, '^(-?%d+):'))
  if at and row and math.abs(now - tonumber(row[3]) - at) <= tolerance then
    redis.pcall('ZADD', KEYS[3], recheck, id)
  else
    redis.pcall('ZREM', KEYS[3], id)
    redis.pcall('HDEL', KEYS[2], id)
  end
end
redis.pcall('PEXPIRE', KEYS[2], ttl)
redis.pcall('PEXPIRE', KEYS[3], ttl)
return {lost, trimmed}`;
