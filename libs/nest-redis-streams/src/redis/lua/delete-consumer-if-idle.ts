import { REDIS_NOW_MS } from './redis-now.js';
/**
 * Deletes a consumer only when it holds no pending entries and has no live beat (see
 * consumer-beat.ts): XGROUP DELCONSUMER drops its PEL, and with it the only record of entries it
 * had read; and a live consumer would come back at its next read, as if nothing had happened.
 *
 * KEYS[1] stream, KEYS[2] the group's beats
 * ARGV[1] group, ARGV[2] consumer
 * Returns 1 when deleted (or already gone), 0 when it still has pending entries, 2 when it is alive.
 */
export const DELETE_CONSUMER_IF_IDLE = `
${REDIS_NOW_MS}
-- ZRANGE, not ZSCORE: the documented ACL users have it (the set holds about the live consumers).
local beats = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
for i = 1, #beats, 2 do
  if beats[i] == ARGV[2] and tonumber(beats[i + 1]) > now then return 2 end
end
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #pending > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1`;
