/** KEYS[1] stream; ARGV group, consumer → 1 when deleted, 0 when it still has pending entries. */
export const DELETE_CONSUMER_IF_IDLE = `
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #pending > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1`;
