import type { Redis } from 'ioredis';

// Ownership checks read the PEL inside the script, so the check and the write are atomic: an old
// owner can never ack, renew or park an entry that another consumer reclaimed in between
// (XACK/XCLAIM take no consumer name and would happily act on someone else's entry).

/**
 * KEYS[1] stream; ARGV group, consumer, idleMs, retryCount (-1 keeps it), ids... → { ids owned
 * by someone else, ids whose
 * payload was trimmed }. XCLAIM silently drops PEL entries whose payload is gone (Redis ≥ 7), so
 * the script compares what it asked for with what XCLAIM returned: those entries must get a
 * tombstone, or they would vanish without a trace.
 */
const CLAIM_IF_OWNED = `
local owned, lost, trimmed, claimed = {}, {}, {}, {}
for i = 5, #ARGV do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)[1]
  if row and row[2] == ARGV[2] then owned[#owned + 1] = ARGV[i] else lost[#lost + 1] = ARGV[i] end
end
for i = 1, #owned, 1000 do
  local args = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
  for j = i, math.min(i + 999, #owned) do args[#args + 1] = owned[j] end
  args[#args + 1] = 'IDLE'; args[#args + 1] = ARGV[3]
  if tonumber(ARGV[4]) >= 0 then args[#args + 1] = 'RETRYCOUNT'; args[#args + 1] = ARGV[4] end
  args[#args + 1] = 'JUSTID'
  for _, id in ipairs(redis.call(unpack(args))) do claimed[id] = true end
end
for _, id in ipairs(owned) do if not claimed[id] then trimmed[#trimmed + 1] = id end end
return {lost, trimmed}`;

/**
 * KEYS[1] stream; ARGV group, consumer, smallest id, largest id, ids... → ids this consumer no
 * longer owns (not acked). Ownership comes from one consumer-filtered XPENDING range over
 * [smallest, largest], walked in pages: far cheaper than one XPENDING per id, and exact however
 * many other entries this consumer has pending in that range. The caller finds the bounds; doing
 * it here cost more Redis time than the acks themselves.
 */
const ACK_IF_OWNED = `
local want = {}
for i = 5, #ARGV do want[ARGV[i]] = true end
local owned, start, last = {}, ARGV[3], ARGV[4]
while true do
  local rows = redis.call('XPENDING', KEYS[1], ARGV[1], start, last, 1000, ARGV[2])
  for _, row in ipairs(rows) do
    if want[row[1]] then owned[#owned + 1] = row[1]; want[row[1]] = nil end
  end
  if #rows < 1000 then break end
  start = '(' .. rows[#rows][1]
end
for i = 1, #owned, 1000 do
  redis.call('XACK', KEYS[1], ARGV[1], unpack(owned, i, math.min(i + 999, #owned)))
end
local lost = {}
for id in pairs(want) do lost[#lost + 1] = id end
return lost`;

/**
 * KEYS[1] stream, KEYS[2] dead-letter stream; ARGV group, consumer, id, requireOwner (1/0),
 * field, value... → the dead-letter entry id, or false when this consumer does not own the entry.
 * XADD and XACK in one script: the entry is never in both places, nor in neither.
 */
const DEAD_LETTER_IF_OWNED = `
if ARGV[4] == '1' then
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)[1]
  if not row or row[2] ~= ARGV[2] then return false end
end
local args = {'XADD', KEYS[2], '*'}
for i = 5, #ARGV do args[#args + 1] = ARGV[i] end
local id = redis.call(unpack(args))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
return id`;

/**
 * KEYS[1] stream; ARGV group, ids... → the delivery count of each id (0 when not pending). One
 * XPENDING per id: a range query for a consumer can be cut short by its other pending entries.
 */
const DELIVERY_COUNTS = `
local counts = {}
for i = 2, #ARGV do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)[1]
  counts[#counts + 1] = row and row[4] or 0
end
return counts`;

/**
 * KEYS[1] stream, KEYS[2] dead-letter stream, KEYS[3] audit hash; ARGV group, consumer, now →
 * { newly lost, dead-letter id } or 0. Entries that trimming removed before the group read them
 * leave no id behind, but Redis' counters keep the evidence: lost = entries-added − the group's
 * entries-read − entries still ahead of its last-delivered-id. That last figure is only cheap when
 * the group is caught up (0) or the whole stream lies ahead of it (length); otherwise the audit
 * waits for a later round. The audit hash remembers what was reported, so several consumers and
 * restarts write one tombstone per loss.
 */
const AUDIT_TRIM_LOSS = `
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
local info = redis.call('XINFO', 'STREAM', KEYS[1])
local group
for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  if field(g, 'name') == ARGV[1] then group = g end
end
if not group or not field(group, 'entries-read') then return 0 end
local read = tonumber(field(group, 'entries-read'))
-- Redis resets entries-read when it reloads the AOF: the counters start over, and so must the
-- audit (rebase on the next countable round) instead of reporting everything read before.
local readKey, rebaseKey = ARGV[1] .. ':read', ARGV[1] .. ':rebase'
if read < tonumber(redis.call('HGET', KEYS[3], readKey) or '-1') then redis.call('HSET', KEYS[3], rebaseKey, '1') end
redis.call('HSET', KEYS[3], readKey, read)
local delivered = field(group, 'last-delivered-id')
local length = tonumber(field(info, 'length'))
local ahead
if length == 0 or cmp(delivered, field(info, 'last-generated-id')) >= 0 then ahead = 0
elseif cmp(field(info, 'recorded-first-entry-id'), delivered) > 0 then ahead = length
else return 0 end
local lost = tonumber(field(info, 'entries-added')) - read - ahead
if redis.call('HGET', KEYS[3], rebaseKey) then
  redis.call('HSET', KEYS[3], ARGV[1], lost)
  redis.call('HDEL', KEYS[3], rebaseKey)
  return 0
end
local reported = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
if lost <= reported then return 0 end
redis.call('HSET', KEYS[3], ARGV[1], lost)
local delta = lost - reported
local id = redis.call('XADD', KEYS[2], '*', 'dlq:reason', 'trimmed-undelivered', 'dlq:stream', KEYS[1], 'dlq:id', '',
  'dlq:group', ARGV[1], 'dlq:consumer', ARGV[2], 'dlq:deliveries', '0', 'dlq:time', ARGV[3], 'dlq:lost_count', delta,
  'dlq:error', delta .. ' entries were trimmed before group ' .. ARGV[1] .. ' read them; their payload is gone.')
return {delta, id}`;

/**
 * KEYS[1] stream; ARGV group, start id → XGROUP CREATE ... MKSTREAM with ENTRIESREAD set, so the
 * group's entries-read counter is exact from the start (Redis leaves it unknown otherwise until
 * the first read, and the trim audit needs it). Errors (BUSYGROUP) are returned as errors.
 */
const CREATE_GROUP = `
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

/** KEYS[1] stream; ARGV group, consumer → 1 when deleted, 0 when it still has pending entries. */
const DELETE_CONSUMER_IF_IDLE = `
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #pending > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1`;

/** The commands the scripts above add to a connection. */
export interface StreamScripts {
  nrsClaimIfOwned(
    stream: string, group: string, consumer: string, idleMs: number, retryCount: number, ...ids: string[]
  ): Promise<[lost: string[], trimmed: string[]]>;
  nrsDeliveryCounts(stream: string, group: string, ...ids: string[]): Promise<number[]>;
  nrsAckIfOwned(stream: string, group: string, consumer: string, smallest: string, largest: string, ...ids: string[]): Promise<string[]>;
  nrsDeadLetterIfOwned(
    stream: string, dlq: string, group: string, consumer: string, id: string, requireOwner: '1' | '0', ...fields: string[]
  ): Promise<string | null>;
  nrsDeleteConsumerIfIdle(stream: string, group: string, consumer: string): Promise<number>;
  nrsCreateGroup(stream: string, group: string, startId: string): Promise<'OK'>;
  nrsAuditTrimLoss(stream: string, dlq: string, audit: string, group: string, consumer: string, now: number): Promise<[number, string] | 0>;
}

export type ScriptedRedis = Redis & StreamScripts;

/** Registers the scripts on a connection (EVALSHA with EVAL fallback, handled by ioredis). */
export function withStreamScripts(redis: Redis): ScriptedRedis {
  redis.defineCommand('nrsClaimIfOwned', { numberOfKeys: 1, lua: CLAIM_IF_OWNED });
  redis.defineCommand('nrsAckIfOwned', { numberOfKeys: 1, lua: ACK_IF_OWNED });
  redis.defineCommand('nrsDeadLetterIfOwned', { numberOfKeys: 2, lua: DEAD_LETTER_IF_OWNED });
  redis.defineCommand('nrsAuditTrimLoss', { numberOfKeys: 3, lua: AUDIT_TRIM_LOSS });
  redis.defineCommand('nrsCreateGroup', { numberOfKeys: 1, lua: CREATE_GROUP });
  redis.defineCommand('nrsDeliveryCounts', { numberOfKeys: 1, lua: DELIVERY_COUNTS });
  redis.defineCommand('nrsDeleteConsumerIfIdle', { numberOfKeys: 1, lua: DELETE_CONSUMER_IF_IDLE });
  return redis as ScriptedRedis;
}
