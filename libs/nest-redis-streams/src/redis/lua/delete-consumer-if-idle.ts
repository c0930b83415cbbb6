/**
 * Deletes a consumer only when it holds no pending entries: XGROUP DELCONSUMER drops its PEL, and
 * with it the only record of entries it had read.
 *
 * KEYS[1] stream
 * ARGV[1] group, ARGV[2] consumer
 * Returns 1 when deleted (or already gone), 0 when it still has pending entries.
 */
export const DELETE_CONSUMER_IF_IDLE = `
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #pending > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1`;
