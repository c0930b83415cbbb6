/**
 * Reports entries that trimming removed before a group read them, once per loss.
 *
 * KEYS[1] stream
 * KEYS[2] dead-letter stream (the tombstone goes there)
 * KEYS[3] audit hash of the stream (`trimAuditKey`), fields per group: `<group>` lost entries
 *         reported so far, `<group>:read` entries-read at the last round, `<group>:run` the
 *         server's run_id at the last round, `<group>:rebase` set while the counters must start
 *         over
 * KEYS[4] audit hash of earlier versions (beside the dead-letter stream), read only; KEYS[3]
 *         again when there is none to read
 * ARGV[1] group, ARGV[2] consumer (named in the tombstone), ARGV[3] now (ms), ARGV[4..12] the
 *         tombstone's field names (reason, stream, id, group, consumer, deliveries, time,
 *         lost count, error: `trimAuditFieldArgs`), ARGV[13] its reason value, ARGV[14] '1'
 *         before a read: return 0 at once, writing nothing, unless the whole stream lies ahead
 *         of the group's last-delivered-id (the only state in which a loss can be counted on
 *         every server)
 * Returns { newly lost count, tombstone id }, or 0 when nothing new was lost or the round
 * cannot count.
 *
 * Trimmed entries leave no id behind, but Redis' counters keep the evidence: lost =
 * entries-added − the group's entries-read − entries still ahead of its last-delivered-id. That
 * last figure is only cheap when the group is caught up (0) or the whole stream lies ahead of it
 * (length); otherwise the audit waits for a later round. The hash remembers what was reported,
 * so several consumers and restarts write one tombstone per loss.
 *
 * How long the evidence lasts depends on the server. Redis 7.0 counts entries-read per entry
 * delivered, so the gap stays in it after the group read past the trimmed range. Redis 7.2+, 8.x
 * and Valkey set entries-read to the entry's position when a group reads from behind the
 * stream's first entry: the gap is forgotten, and lost is 0 from then on. There, a loss is
 * countable only while the stream lies wholly ahead of the group, so the consumer runs this
 * before a read that may cross the gap (ARGV[14], `auditTrimLossBeforeRead`). After such a read
 * lost drops back to 0, which the "lower than reported" branch takes as the new base, so the
 * next gap is counted from there.
 */
export const AUDIT_TRIM_LOSS = `
local function field(list, name)
  for i = 1, #list, 2 do if list[i] == name then return list[i + 1] end end
end
local function cmp(a, b)
  local am, as = string.match(a, '(%d+)-(%d+)')
  local bm, bs = string.match(b, '(%d+)-(%d+)')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  if am ~= bm then return am < bm and -1 or 1 end
  if as ~= bs then return as < bs and -1 or 1 end
  return 0
end
-- Before a read, most rounds end here: a lag (entries-added - entries-read; nil when Redis cannot
-- tell) under the stream's length means entries the group read are still in the stream, so it is
-- not behind the first entry (trimming takes the oldest first) and the round below would return
-- 0 as well. XINFO GROUPS costs a third of XINFO STREAM, whose reply carries two whole entries.
if ARGV[14] == '1' then
  local lag
  for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
    if field(g, 'name') == ARGV[1] then lag = field(g, 'lag') end
  end
  if lag and tonumber(lag) < redis.call('XLEN', KEYS[1]) then return 0 end
end
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local group
for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  if field(g, 'name') == ARGV[1] then group = g end
end
if not group or not field(group, 'entries-read') then return 0 end
local read = tonumber(field(group, 'entries-read'))
local delivered = field(group, 'last-delivered-id')
local length = tonumber(field(info, 'length'))
local caughtUp = length == 0 or cmp(delivered, field(info, 'last-generated-id')) >= 0
local behind = not caughtUp and cmp(field(info, 'recorded-first-entry-id'), delivered) > 0
if ARGV[14] == '1' and not behind then return 0 end
local readKey, rebaseKey = ARGV[1] .. ':read', ARGV[1] .. ':rebase'
local remembered = redis.call('HGET', KEYS[3], readKey)
-- First round under this hash for a group the old hash knows: its losses were reported there
-- (over and over when streams shared it). Start from the current count, report only new ones.
if not remembered and KEYS[4] ~= KEYS[3] and redis.call('HEXISTS', KEYS[4], readKey) == 1 then
  redis.call('HSET', KEYS[3], rebaseKey, '1')
end
-- Redis resets entries-read when it reloads the AOF: the counters start over, and so must the
-- audit (rebase on the next countable round) instead of reporting everything read before.
if read < tonumber(remembered or '-1') then redis.call('HSET', KEYS[3], rebaseKey, '1') end
-- A restart can reset it before any round saw the old value (entries read and the process
-- killed between two rounds): a new run_id means the counters may have started over, so the
-- audit rebases as for a reset it saw.
local runKey = ARGV[1] .. ':run'
local runId = string.match(redis.call('INFO', 'server'), 'run_id:(%w+)')
local lastRun = redis.call('HGET', KEYS[3], runKey)
if runId and lastRun ~= runId then
  if lastRun then redis.call('HSET', KEYS[3], rebaseKey, '1') end
  redis.call('HSET', KEYS[3], runKey, runId)
end
redis.call('HSET', KEYS[3], readKey, read)
local ahead
if caughtUp then ahead = 0
elseif behind then ahead = length
else return 0 end
local lost = tonumber(field(info, 'entries-added')) - read - ahead
if redis.call('HGET', KEYS[3], rebaseKey) then
  redis.call('HSET', KEYS[3], ARGV[1], lost)
  redis.call('HDEL', KEYS[3], rebaseKey)
  return 0
end
local reported = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
-- Lower than reported: the group's entries-read was repaired (after a failover) or rebased.
if lost < reported then redis.call('HSET', KEYS[3], ARGV[1], lost) end
if lost <= reported then return 0 end
redis.call('HSET', KEYS[3], ARGV[1], lost)
local delta = lost - reported
local id = redis.call('XADD', KEYS[2], '*', ARGV[4], ARGV[13], ARGV[5], KEYS[1], ARGV[6], '',
  ARGV[7], ARGV[1], ARGV[8], ARGV[2], ARGV[9], '0', ARGV[10], ARGV[3], ARGV[11], delta,
  ARGV[12], delta .. ' entries were trimmed before group ' .. ARGV[1] .. ' read them; their payload is gone.')
return {delta, id}`;
