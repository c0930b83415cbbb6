// The schedule of a stream (delayed delivery, long RetryLater): a sorted set of members by due
// time and a hash of the packed entries, in the stream's slot (keys/schedule-keys.ts). A member is
// the event id of a delayed emit (so a retried emit replaces its entry) or `nrs:retry:<entry id>:
// <group>` for a RetryLater's copy, one per entry and group (keys/schedule-keys.ts says how the two
// never meet). An entry is packed with cmsgpack (in Redis and Valkey alike) inside the script, so
// its bytes are never rebuilt in JS: { head (XADD arguments before the fields), fields, IDMP
// producer or '' }.

/**
 * Lua helpers. `dueOf`: a due time given `in` ms from now is counted from Redis' clock (TIME), so
 * a producer whose clock is off delays by what it asked; one given `at` is the caller's own time.
 * `decodeEntry`: the packed entry under a member, or nil and what is wrong with it (nothing stored,
 * or a value that is not an entry packed here: a record written by hand or damaged), so that no
 * script fails on such a record. `MALFORMED`: the score such a record is set aside at by the
 * mover: never due, listed apart, still there for an operator to read and remove. A due time this
 * library writes is at most about 10 years ahead (errors/invalid-delay.error.ts), never +inf.
 */
const SCHEDULE_HELPERS = `
local MALFORMED = '+inf'
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function dueOf(value, mode)
  if mode == 'in' then return nowMs() + tonumber(value) end
  return tonumber(value)
end
local function allText(list)
  for i = 1, #list do if type(list[i]) ~= 'string' then return false end end
  return true
end
local function decodeEntry(packed)
  if not packed then return nil, 'no entry is stored under this member' end
  local ok, entry = pcall(cmsgpack.unpack, packed)
  local bad = 'its stored value is not an entry this library packed ({head, fields, producer} in MessagePack)'
  if not ok or type(entry) ~= 'table' then return nil, bad end
  local head, fields = entry[1], entry[2]
  if type(head) ~= 'table' or type(fields) ~= 'table' or type(entry[3]) ~= 'string' then return nil, bad end
  if #head == 0 or head[#head] ~= '*' or not allText(head) then return nil, bad end
  if #fields == 0 or #fields % 2 ~= 0 or not allText(fields) then return nil, bad end
  return entry
end`;

/**
 * KEYS[1] schedule sorted set, KEYS[2] schedule hash
 * ARGV[1] member, ARGV[2] due time (ms since epoch) or delay (ms), ARGV[3] 'at' or 'in' (ARGV[2]
 * is a delay counted from Redis' clock), ARGV[4] IDMP producer ('' for none), ARGV[5] head length
 * n, ARGV[6..5+n] the XADD head (trim arguments, then `*`), the rest the fields
 * Returns { 1 when the member was new in the schedule, 0 when it replaced the one held; its due time }.
 */
export const SCHEDULE_ENTRY = `${SCHEDULE_HELPERS}
local n = tonumber(ARGV[5])
local head, fields = {}, {}
for i = 6, 5 + n do head[#head + 1] = ARGV[i] end
for i = 6 + n, #ARGV do fields[#fields + 1] = ARGV[i] end
local due = dueOf(ARGV[2], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], cmsgpack.pack({head, fields, ARGV[4]}))
return {redis.call('ZADD', KEYS[1], due, ARGV[1]), due}`;

/**
 * KEYS[1] schedule sorted set, KEYS[2] schedule hash, KEYS[3] the stream
 * ARGV[1] most entries to look at (at most 1000: the removals go to ZREM/HDEL as one argument
 * list), ARGV[2] '1' when XADD … IDMP may be used (every node has it)
 * Returns { entries moved, members looked at, Redis' time (ms), score of the first member left
 * ('' when none), the members set aside }.
 *
 * "Now" is the server's clock (TIME), so movers on hosts whose clocks differ agree on what is due.
 * The entries are added and removed from the schedule in the same script: a second mover running
 * at the same time finds them gone (scripts run one at a time), so an entry enters the stream once.
 * An XADD that fails (OOM, a key of another type) ends the round: the entries added before it are
 * removed from the schedule, the failed one and those after it stay, and the error is returned.
 * A due member that holds no valid entry is set aside (its score becomes MALFORMED), so it neither
 * fails the round nor holds back the entries due after it. With IDMP (Redis 8.6+) a copy already
 * added under the same event id and producer is dropped by the stream itself as well.
 */
export const MOVE_DUE = `${SCHEDULE_HELPERS}
local now = nowMs()
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local done, aside, moved, failure = {}, {}, 0, nil
for _, id in ipairs(ids) do
  local entry = decodeEntry(redis.call('HGET', KEYS[2], id))
  if not entry then
    aside[#aside + 1] = id
  else
    local args = {'XADD', KEYS[3]}
    if ARGV[2] == '1' and entry[3] ~= '' then
      -- The event id: a member of an event id that starts with nrs: has the prefix nrs:emit: before it.
      local eventId = id
      if string.sub(id, 1, 9) == 'nrs:emit:' then eventId = string.sub(id, 10) end
      args[#args + 1] = 'IDMP'; args[#args + 1] = entry[3]; args[#args + 1] = eventId
    end
    for _, word in ipairs(entry[1]) do args[#args + 1] = word end
    for _, word in ipairs(entry[2]) do args[#args + 1] = word end
    local reply = redis.pcall(unpack(args))
    if type(reply) == 'table' and reply.err then failure = reply.err; break end
    moved = moved + 1
    done[#done + 1] = id
  end
end
if #done > 0 then
  redis.call('ZREM', KEYS[1], unpack(done))
  redis.call('HDEL', KEYS[2], unpack(done))
end
for _, id in ipairs(aside) do redis.call('ZADD', KEYS[1], MALFORMED, id) end
if failure then return redis.error_reply(failure) end
local nextDue = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {moved, #done + #aside, now, nextDue[2] or '', aside}`;

/**
 * KEYS[1] schedule sorted set, KEYS[2] schedule hash; ARGV the members to try, in order
 * Returns the first member that was scheduled (and is not any more); false when none was.
 */
export const CANCEL_SCHEDULED = `
for _, member in ipairs(ARGV) do
  local held = redis.call('HDEL', KEYS[2], member)
  if redis.call('ZREM', KEYS[1], member) + held > 0 then return member end
end
return false`;

/**
 * KEYS[1] schedule sorted set, KEYS[2] schedule hash; ARGV[1] most entries to list (0: figures only)
 * Returns { count, Redis' time (ms), score of the first member ('' when none), {member, score,
 * fields, problem ('' for a valid entry)}... for the first ARGV[1] members not set aside by due
 * time, members set aside, {member, problem}... for the first ARGV[1] of them }.
 */
export const LIST_SCHEDULED = `${SCHEDULE_HELPERS}
local count = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[1])
local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2] or ''
local listed, asideCount, aside = {}, 0, {}
if limit > 0 then
  local rows = redis.call('ZRANGE', KEYS[1], '-inf', '(' .. MALFORMED, 'BYSCORE', 'LIMIT', 0, limit, 'WITHSCORES')
  for i = 1, #rows, 2 do
    local entry, problem = decodeEntry(redis.call('HGET', KEYS[2], rows[i]))
    listed[#listed + 1] = {rows[i], rows[i + 1], entry and entry[2] or {}, problem or ''}
  end
  asideCount = redis.call('ZCOUNT', KEYS[1], MALFORMED, MALFORMED)
  for _, member in ipairs(redis.call('ZRANGE', KEYS[1], MALFORMED, MALFORMED, 'BYSCORE', 'LIMIT', 0, limit)) do
    local _, problem = decodeEntry(redis.call('HGET', KEYS[2], member))
    aside[#aside + 1] = {member, problem or 'due at +inf: it never comes due'}
  end
end
return {count, nowMs(), first, listed, asideCount, aside}`;

/**
 * A handler asked for a retry later than the reclaimer's min-idle (RetryLater): a copy of the
 * entry is scheduled for this group and the entry acked, in one script, so a crash cannot leave
 * it in neither place or in both.
 *
 * KEYS[1] stream, KEYS[2] schedule sorted set, KEYS[3] schedule hash
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] entry id, ARGV[4] due time (ms since epoch) or delay
 * (ms), ARGV[5] 'at' or 'in' (see dueOf), ARGV[6] name of the target-group field
 * Returns the member it was scheduled under (`nrs:retry:<entry id>:<group>`: each group that
 * retries the entry has its own copy); false when this consumer does not own the entry; 0 when
 * its payload was trimmed away (it stays pending: the caller parks it).
 *
 * The copy carries the target-group field set to this group (any earlier one replaced): the
 * stream's other groups, which handled the entry already, acknowledge it unhandled, as after a
 * re-drive. It is scheduled without IDMP: it carries the event id of the entry already in the
 * stream, which IDMP would take for a duplicate and drop.
 */
export const RESCHEDULE_IF_OWNED = `${SCHEDULE_HELPERS}
local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)[1]
if not row or row[2] ~= ARGV[2] then return false end
local entry = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])[1]
if not entry then return 0 end
local fields, copy = entry[2], {}
for i = 1, #fields - 1, 2 do
  if fields[i] ~= ARGV[6] then copy[#copy + 1] = fields[i]; copy[#copy + 1] = fields[i + 1] end
end
copy[#copy + 1] = ARGV[6]; copy[#copy + 1] = ARGV[1]
local member = 'nrs:retry:' .. ARGV[3] .. ':' .. ARGV[1]
redis.call('HSET', KEYS[3], member, cmsgpack.pack({{'*'}, copy, ''}))
redis.call('ZADD', KEYS[2], dueOf(ARGV[4], ARGV[5]), member)
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
return member`;
