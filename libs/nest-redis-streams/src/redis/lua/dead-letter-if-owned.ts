/**
 * KEYS[1] stream, KEYS[2] dead-letter stream; ARGV group, consumer, id, requireOwner (1/0),
 * field, value... → the dead-letter entry id, or false when this consumer does not own the entry.
 * XADD and XACK in one script: the entry is never in both places, nor in neither.
 */
export const DEAD_LETTER_IF_OWNED = `
if ARGV[4] == '1' then
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)[1]
  if not row or row[2] ~= ARGV[2] then return false end
end
local args = {'XADD', KEYS[2], '*'}
for i = 5, #ARGV do args[#args + 1] = ARGV[i] end
local id = redis.call(unpack(args))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
return id`;
