/**
 * KEYS[1] stream; ARGV group, start id → XGROUP CREATE ... MKSTREAM with ENTRIESREAD set, so the
 * group's entries-read counter is exact from the start (Redis leaves it unknown otherwise until
 * the first read, and the trim audit needs it). Errors (BUSYGROUP) are returned as errors.
 */
export const CREATE_GROUP = `
local added, length = 0, 0
if redis.call('EXISTS', KEYS[1]) == 1 then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  for i = 1, #info, 2 do
    if info[i] == 'entries-added' then added = info[i + 1] elseif info[i] == 'length' then length = info[i + 1] end
  end
end
local args = {'XGROUP', 'CREATE', KEYS[1], ARGV[1], ARGV[2], 'MKSTREAM'}
if ARGV[2] == '$' then args[#args + 1] = 'ENTRIESREAD'; args[#args + 1] = added
elseif ARGV[2] == '0' then args[#args + 1] = 'ENTRIESREAD'; args[#args + 1] = added - length end
local reply = redis.pcall(unpack(args))
if type(reply) == 'table' and reply.err then return redis.error_reply(reply.err) end
return reply`;
