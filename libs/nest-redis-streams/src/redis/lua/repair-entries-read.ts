/**
 * KEYS[1] stream; ARGV group → how far the group's entries-read counter was off (0 when it was
 * right or cannot be judged). When the group has been delivered everything up to the stream's
 * last-generated-id, its entries-read must equal the stream's entries-added; when it does not
 * (Redis 7.0 replicas do not advance the counter, so it is stale after a failover or an AOF
 * reload), `XGROUP SETID <same id> ENTRIESREAD <entries-added>` sets it right without moving the
 * group: lag is exact again, also for the entries read afterwards, and the fix replicates.
 * The check and the write are one script, so no read can slip in between.
 * A trim loss (entries removed before the group read them) leaves the same gap in the counters:
 * call this only after the trim audit has counted the group's losses in the same round.
 */
export const REPAIR_ENTRIES_READ = `
local function field(list, name)
  for i = 1, #list, 2 do if list[i] == name then return list[i + 1] end end
end
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local added = field(info, 'entries-added')
if not added then return 0 end
for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  if field(g, 'name') == ARGV[1] then
    local read, delivered = field(g, 'entries-read'), field(g, 'last-delivered-id')
    if not read or read == added or delivered ~= field(info, 'last-generated-id') then return 0 end
    redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], delivered, 'ENTRIESREAD', added)
    return added - read
  end
end
return 0`;
