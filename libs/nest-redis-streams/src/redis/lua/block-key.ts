import { DEAD_LETTER_IF_OWNED } from './dead-letter-if-owned.js';

// `onDeadLetter: 'block-key'`: the block of an ordering key lives in a hash (field = key, value =
// JSON, see keys/blocked-key-keys.ts) and the entries waiting behind it in a stream per key. Every
// step that moves an entry (hold, park, ack of the blocker + release of the next) is one script,
// so a crash between two steps can re-run an entry but never strand a key or run one out of order.

/**
 * Lua helpers shared by the scripts below. `mayRun`: the entry is the one the block waits for: the
 * blocker itself (its retry), the held copy being released (`current`), or, only while the block
 * is `parked`, the re-drive of the blocker's dead letter (its `nrs:redriven_from`). A release
 * points `entry` and `current` at the released copy and clears `deadLetter`, so after it only that
 * copy may run: the old blocker's retry, or a later re-drive or discard of its dead letter, cannot
 * start a second entry of the key. `blockOf`: a record that is not the JSON written here (by hand,
 * or by a newer version) reads as a block nothing may pass, until an operator releases the key.
 * `blockWaitingFor`: the key (and block) that waits for entry `id`, for the operator's writes,
 * which do not know the handler's orderingKey. It reads the whole hash; a record is decoded only
 * when it holds the id (or the dead letter a re-drive came from). Such writes are rare.
 */
const BLOCK_HELPERS = `
local function blockOf(hash, key)
  local raw = redis.call('HGET', hash, key)
  if not raw then return nil end
  local ok, block = pcall(cjson.decode, raw)
  if not ok or type(block) ~= 'table' then
    return {entry = '', current = '', deadLetter = '', deadLetterStream = '', state = 'unreadable'}
  end
  return block
end
local function fieldOf(stream, id, name)
  local entry = redis.call('XRANGE', stream, id, id)[1]
  if not entry then return '' end
  local f = entry[2]
  for i = 1, #f - 1, 2 do if f[i] == name then return f[i + 1] end end
  return ''
end
local function mayRun(block, stream, id)
  if block.entry == id or block.current == id then return true end
  local dl = block.deadLetter
  if block.state ~= 'parked' or type(dl) ~= 'string' or dl == '' then return false end
  return fieldOf(stream, id, 'nrs:redriven_from') == dl
end
local function blockWaitingFor(hash, stream, id)
  local from = fieldOf(stream, id, 'nrs:redriven_from')
  local all = redis.call('HGETALL', hash)
  for i = 1, #all - 1, 2 do
    local raw = all[i + 1]
    if string.find(raw, id, 1, true) or (from ~= '' and string.find(raw, from, 1, true)) then
      local ok, b = pcall(cjson.decode, raw)
      if ok and type(b) == 'table' and mayRun(b, stream, id) then return all[i], b end
    end
  end
  return nil, nil
end
local function owns(stream, group, consumer, id)
  local row = redis.call('XPENDING', stream, group, id, id, 1)[1]
  return row ~= nil and row[2] == consumer
end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function saveBlock(hash, key, entry, state, deadLetter, dlStream, since, current)
  redis.call('HSET', hash, key, cjson.encode({entry = entry, state = state, deadLetter = deadLetter,
    deadLetterStream = dlStream, since = since, current = current or ''}))
end
local function releaseNext(stream, hash, held, group, key, block)
  local head = redis.call('XRANGE', held, '-', '+', 'COUNT', 1)[1]
  if not head then
    redis.call('HDEL', hash, key)
    redis.call('DEL', held)
    return ''
  end
  local args = {'XADD', stream, '*'}
  local f = head[2]
  for i = 1, #f - 1, 2 do
    if f[i] ~= 'nrs:group' then
      args[#args + 1] = f[i]
      args[#args + 1] = f[i + 1]
    end
  end
  args[#args + 1] = 'nrs:group'
  args[#args + 1] = group
  local id = redis.call(unpack(args))
  redis.call('XDEL', held, head[1])
  saveBlock(hash, key, id, 'releasing', '', '', tonumber(block.since) or nowMs(), id)
  return id
end
`;

/**
 * Run or hold, before a block-key handler runs an entry. KEYS[1] stream, KEYS[2] blocked-keys
 * hash, KEYS[3] the key's held stream; ARGV group, consumer, id, ordering key, then (only when
 * asked again after 'trimmed') the entry's fields as read → 'run' (the key is not blocked),
 * 'blocker' (it is, and this is the entry its block waits for), 'held' (copied to the held stream
 * and acked, one step), 'lost' (this consumer does not own the entry), 'trimmed' (the key is
 * blocked and the entry's payload was trimmed since its read: ask again with its fields, which
 * are held instead). The fields are not sent every time: the payload would cross the wire twice.
 */
export const RUN_OR_HOLD = `${BLOCK_HELPERS}
local block = blockOf(KEYS[2], ARGV[4])
if not block then return 'run' end
if mayRun(block, KEYS[1], ARGV[3]) then return 'blocker' end
if not owns(KEYS[1], ARGV[1], ARGV[2], ARGV[3]) then return 'lost' end
local entry = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])[1]
local f
if entry then f = entry[2] elseif #ARGV > 4 then f = {unpack(ARGV, 5)} else return 'trimmed' end
local args = {'XADD', KEYS[3], '*'}
local heldFrom = ARGV[3]
for i = 1, #f - 1, 2 do
  if f[i] == 'nrs:held_from' then heldFrom = f[i + 1] else
    args[#args + 1] = f[i]
    args[#args + 1] = f[i + 1]
  end
end
args[#args + 1] = 'nrs:held_from'
args[#args + 1] = heldFrom
redis.call(unpack(args))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
return 'held'`;

/**
 * An entry of a block-key handler failed and will be retried. KEYS[1] stream, KEYS[2] blocked-keys
 * hash; ARGV group, consumer, id, ordering key → 'blocked' when the key is now blocked by it
 * ('failing'), 'other' when another entry blocks the key (this one ran before that block began:
 * it leaves it alone), false when this consumer no longer owns the entry. Checked here, in the
 * script that writes the block: a consumer paused past min-idle, whose entry another consumer
 * took, ran and acked meanwhile, must not block the key by an entry nothing will run again.
 * A block keeps its `since` when its blocker changes (a held copy or a re-drive failing again).
 */
export const MARK_KEY_FAILING = `${BLOCK_HELPERS}
if not owns(KEYS[1], ARGV[1], ARGV[2], ARGV[3]) then return false end
local block = blockOf(KEYS[2], ARGV[4])
local since = nowMs()
if block then
  if not mayRun(block, KEYS[1], ARGV[3]) then return 'other' end
  since = tonumber(block.since) or since
end
saveBlock(KEYS[2], ARGV[4], ARGV[3], 'failing', '', '', since)
return 'blocked'`;

/**
 * The park of an entry of a block-key group: DEAD_LETTER_IF_OWNED (same ARGV after the first two)
 * and, in the same script, the key's block becomes 'parked' with the dead letter's id. KEYS[1]
 * stream, KEYS[2] dead-letter stream, KEYS[3] blocked-keys hash; ARGV[1] '1' when the ordering key
 * is known, '0' when not, ARGV[2] the key (any string, '' included; ignored with '0'). The key is
 * unknown for a payload trimmed or undecodable, and for an operator's park (the operations layer
 * does not know the handler's orderingKey): then the blocks are searched for one that waits for
 * this entry (blockWaitingFor: its blocker, released copy, or the re-drive of its dead letter), and
 * the dead letter gets that key's `nrs:blocked_key`, so that its re-drive passes the block and its
 * discard releases the key. Found nowhere, the entry blocks no key and is parked as any other.
 * "Known" is a flag of its own, not a key value that means "none": every string is a real key,
 * the empty one too.
 * One script: a crash between park and block would leave a block its re-drive cannot recognise.
 */
export const PARK_AND_BLOCK = `${BLOCK_HELPERS}
local keyKnown = table.remove(ARGV, 1) == '1'
local blockKey = table.remove(ARGV, 1)
if not keyKnown then
  blockKey = blockWaitingFor(KEYS[3], KEYS[1], ARGV[3])
  if blockKey ~= nil then
    table.insert(ARGV, 6, blockKey)
    table.insert(ARGV, 6, 'nrs:blocked_key')
    ARGV[5] = tostring(tonumber(ARGV[5]) + 2)
  end
end
local function park()
${DEAD_LETTER_IF_OWNED}
end
local id = park()
if id and blockKey ~= nil then
  local block = blockOf(KEYS[3], blockKey)
  local since = nowMs()
  if block then
    if not mayRun(block, KEYS[1], ARGV[3]) then return id end
    since = tonumber(block.since) or since
  end
  saveBlock(KEYS[3], blockKey, ARGV[3], 'parked', id, KEYS[2], since)
end
return id`;

/**
 * A block-key handler succeeded with the entry its key's block waits for: ack it (only while this
 * consumer owns it) and release the next held entry, in one script, so a crash in between re-runs
 * the entry instead of stranding the key. KEYS[1] stream, KEYS[2] blocked-keys hash, KEYS[3] the
 * key's held stream; ARGV group, consumer, id, ordering key, requireOwner ('0' for an entry whose
 * payload was trimmed: Redis dropped it from the PEL) → false when not owned; '' when
 * acked and nothing was released (the key is free now, or another entry blocks it); else the
 * id of the released copy, added to the stream for this group only (`nrs:group`). Release first,
 * ack last: should the XADD fail (out of memory), the entry stays pending and runs again instead
 * of an ack that stands with nothing released.
 */
export const ACK_AND_RELEASE = `${BLOCK_HELPERS}
if ARGV[5] ~= '0' and not owns(KEYS[1], ARGV[1], ARGV[2], ARGV[3]) then return false end
local block = blockOf(KEYS[2], ARGV[4])
local released = ''
if block and mayRun(block, KEYS[1], ARGV[3]) then
  released = releaseNext(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[4], block)
end
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
return released`;

/**
 * An operator's ack (StreamOperations.ack, the console) of a pending entry, whoever holds it. The
 * operations layer does not know the handler's orderingKey, so the blocks are searched for one
 * that waits for this entry (blockWaitingFor); when found, the ack says "this entry is done" as
 * the consumer's own success does (ACK_AND_RELEASE): the key's next held entry is released in the
 * same script, or the key freed, instead of a block waiting for a retry that never comes.
 * KEYS[1] stream, KEYS[2] blocked-keys hash, KEYS[3] the held stream of the key named in ARGV
 * (touched only when it is the key found); ARGV group, id, '1' when a key is named ('0' when
 * not), the key → {'gone'}: not pending (acked or parked meanwhile), nothing written;
 * {'key', k}: key k's block waits for the entry but another key (or none) was named: nothing
 * written, run again naming k (its held stream must be one of the script's keys); {'acked'}: no
 * block waited for it; {'acked', released}: the key's block did, and released is the copy of its
 * next held entry now in the stream ('' when none waited: the key is free). Release first, ack
 * last, as in ACK_AND_RELEASE.
 */
export const OPERATOR_ACK = `${BLOCK_HELPERS}
if not redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)[1] then return {'gone'} end
local key, block = blockWaitingFor(KEYS[2], KEYS[1], ARGV[2])
if key == nil then
  redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
  return {'acked'}
end
if ARGV[3] ~= '1' or key ~= ARGV[4] then return {'key', key} end
local released = releaseNext(KEYS[1], KEYS[2], KEYS[3], ARGV[1], key, block)
redis.call('XACK', KEYS[1], ARGV[1], ARGV[2])
return {'acked', released}`;

/**
 * An operator releases a blocked key. KEYS[1] stream, KEYS[2] blocked-keys hash, KEYS[3] the key's
 * held stream, KEYS[4] dead-letter stream; ARGV group, ordering key, dead-letter id ('' = release
 * whatever blocks the key), force ('1' or '0'). With a dead-letter id, that dead letter is deleted
 * in the same script (a discard) and the key released only while the block is `parked` on it, so
 * a crash cannot discard the blocker and leave its key blocked; a dead letter no longer there
 * (re-driven since the discard read it: its copy is the blocker's now) releases nothing, or the
 * next entry would run before that copy. Without one, a `failing` or `releasing` key is released
 * only when forced: an entry of it is still retried or running, and the release would run the
 * next one beside it. → {dead letters deleted (0/1), released}:
 * released is 'not-blocked' (nothing released), 'busy:<state>' (refused, not forced), '' (none
 * waited: the key is free now) or the released copy's id.
 */
export const RELEASE_BLOCKED_KEY = `${BLOCK_HELPERS}
local deleted = 0
if ARGV[3] ~= '' then
  deleted = redis.call('XDEL', KEYS[4], ARGV[3])
  if deleted == 0 then return {0, 'not-blocked'} end
end
local block = blockOf(KEYS[2], ARGV[2])
if not block then return {deleted, 'not-blocked'} end
if ARGV[3] ~= '' then
  if block.state ~= 'parked' or block.deadLetter ~= ARGV[3] then return {deleted, 'not-blocked'} end
elseif ARGV[4] ~= '1' and (block.state == 'failing' or block.state == 'releasing') then
  return {deleted, 'busy:' .. block.state}
end
return {deleted, releaseNext(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], block)}`;
