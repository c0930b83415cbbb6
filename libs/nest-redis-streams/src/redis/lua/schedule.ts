// The schedule of a stream (delayed delivery, long RetryLater): a sorted set of event ids by due
// time and a hash of the packed entries, in the stream's slot (keys/schedule-keys.ts). An entry is
// packed with cmsgpack (in Redis and Valkey alike) inside the script, so its bytes are never
// rebuilt in JS: { head (XADD arguments before the fields), fields, IDMP producer or '' }.

/**
 * KEYS[1] schedule sorted set, KEYS[2] schedule hash
 * ARGV[1] event id, ARGV[2] due time (ms since epoch), ARGV[3] IDMP producer ('' for none),
 * ARGV[4] head length n, ARGV[5..4+n] the XADD head (trim arguments, then `*`), the rest the fields
 * Returns 1 when the event id was new in the schedule, 0 when it replaced the one held.
 */
export const SCHEDULE_ENTRY = `
local n = tonumber(ARGV[4])
local head, fields = {}, {}
for i = 5, 4 + n do head[#head + 1] = ARGV[i] end
for i = 5 + n, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[2], ARGV[1], cmsgpack.pack({head, fields, ARGV[3]}))
return redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])`;

/**
 * KEYS[1] schedule sorted set, KEYS[2] schedule hash, KEYS[3] the stream
 * ARGV[1] most entries to move (at most 1000: the removals go to ZREM/HDEL as one argument list),
 * ARGV[2] '1' when XADD … IDMP may be used (every node has it)
 * Returns { entries moved, due time of the next entry (ms) or -1 when none is left }.
 *
 * "Now" is the server's clock (TIME), so movers on hosts whose clocks differ agree on what is due.
 * The entries are added and removed from the schedule in the same script: a second mover running
 * at the same time finds them gone (scripts run one at a time), so an entry enters the stream once.
 * An XADD that fails (OOM, a key of another type) ends the round: the entries added before it are
 * removed from the schedule, the failed one and those after it stay, and the error is returned.
 * With IDMP (Redis 8.6+) a copy already added under the same event id and producer is dropped by
 * the stream itself as well.
 */
export const MOVE_DUE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local done, moved, failure = {}, 0, nil
for _, id in ipairs(ids) do
  local packed = redis.call('HGET', KEYS[2], id)
  if packed then
    local entry = cmsgpack.unpack(packed)
    local args = {'XADD', KEYS[3]}
    if ARGV[2] == '1' and entry[3] ~= '' then
      args[#args + 1] = 'IDMP'; args[#args + 1] = entry[3]; args[#args + 1] = id
    end
    for _, word in ipairs(entry[1]) do args[#args + 1] = word end
    for _, word in ipairs(entry[2]) do args[#args + 1] = word end
    local reply = redis.pcall(unpack(args))
    if type(reply) == 'table' and reply.err then failure = reply.err; break end
    moved = moved + 1
  end
  done[#done + 1] = id
end
if #done > 0 then
  redis.call('ZREM', KEYS[1], unpack(done))
  redis.call('HDEL', KEYS[2], unpack(done))
end
if failure then return redis.error_reply(failure) end
local nextDue = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if nextDue[2] then return {moved, tonumber(nextDue[2])} end
return {moved, -1}`;

/**
 * KEYS[1] schedule sorted set, KEYS[2] schedule hash; ARGV[1] event id
 * Returns 1 when the entry was scheduled (and is not any more), 0 when it was not.
 */
export const CANCEL_SCHEDULED = `
redis.call('HDEL', KEYS[2], ARGV[1])
return redis.call('ZREM', KEYS[1], ARGV[1])`;

/**
 * KEYS[1] schedule sorted set, KEYS[2] schedule hash; ARGV[1] now (ms), ARGV[2] most entries to list (0: figures only)
 * Returns { count, next due (ms) or -1, oldest overdue due time (ms) or -1, {id, due, fields}... }
 * for the first ARGV[2] entries by due time.
 */
export const LIST_SCHEDULED = `
local count = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[2])
local rows = redis.call('ZRANGE', KEYS[1], 0, math.max(limit, 1) - 1, 'WITHSCORES')
local first = -1
if rows[2] then first = tonumber(rows[2]) end
local overdue = -1
if first ~= -1 and first <= tonumber(ARGV[1]) then overdue = first end
local listed = {}
for i = 1, math.min(#rows, 2 * limit), 2 do
  local packed = redis.call('HGET', KEYS[2], rows[i])
  local fields = {}
  if packed then fields = cmsgpack.unpack(packed)[2] end
  listed[#listed + 1] = {rows[i], rows[i + 1], fields}
end
return {count, first, overdue, listed}`;

/**
 * A handler asked for a retry later than the reclaimer's min-idle (RetryLater): a copy of the
 * entry is scheduled under its event id and the entry acked, in one script, so a crash cannot
 * leave it in neither place or in both.
 *
 * KEYS[1] stream, KEYS[2] schedule sorted set, KEYS[3] schedule hash
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] entry id, ARGV[4] due time (ms), ARGV[5] name of the
 * event-id field, ARGV[6] name of the target-group field
 * Returns the event id it was scheduled under (`entry:<id>` for an entry without one); false when
 * this consumer does not own the entry; 0 when its payload was trimmed away (it stays pending:
 * the caller parks it).
 *
 * The copy carries the target-group field set to this group (any earlier one replaced): the
 * stream's other groups, which handled the entry already, acknowledge it unhandled, as after a
 * re-drive. It is scheduled without IDMP: it carries the event id of the entry already in the
 * stream, which IDMP would take for a duplicate and drop.
 */
export const RESCHEDULE_IF_OWNED = `
local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)[1]
if not row or row[2] ~= ARGV[2] then return false end
local entry = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])[1]
if not entry then return 0 end
local fields, copy = entry[2], {}
local member = 'entry:' .. ARGV[3]
for i = 1, #fields - 1, 2 do
  if fields[i] == ARGV[5] then member = fields[i + 1] end
  if fields[i] ~= ARGV[6] then copy[#copy + 1] = fields[i]; copy[#copy + 1] = fields[i + 1] end
end
copy[#copy + 1] = ARGV[6]; copy[#copy + 1] = ARGV[1]
redis.call('HSET', KEYS[3], member, cmsgpack.pack({{'*'}, copy, ''}))
redis.call('ZADD', KEYS[2], ARGV[4], member)
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
return member`;
