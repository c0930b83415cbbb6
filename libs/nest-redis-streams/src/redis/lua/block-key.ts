import { DEAD_LETTER_IF_OWNED } from './dead-letter-if-owned.js';

// `onDeadLetter: 'block-key'`: the block of an ordering key lives in a hash (field = key, value =
// JSON, see keys/blocked-key-keys.ts) and the entries waiting behind it in a stream per key. Every
// step that moves an entry (hold, park, ack of the blocker + release of the next) is one script,
// so a crash between two steps can re-run an entry but never strand a key or run one out of order.

/**
 * Lua helpers shared by the scripts below. `mayRun`: the entry is the one the block waits for: the
 * blocker itself (its retry), the held copy being released (`current`), or the re-drive of the
 * blocker's dead letter (its `nrs:redriven_from`).
 */
const BLOCK_HELPERS = `
local function blockOf(hash, key)
  local raw = redis.call('HGET', hash, key)
  if not raw then return nil end
  return cjson.decode(raw)
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
  local dl = block.deadLetter or ''
  return dl ~= '' and fieldOf(stream, id, 'nrs:redriven_from') == dl
end
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function saveBlock(hash, key, entry, state, deadLetter, dlStream, since)
  redis.call('HSET', hash, key, cjson.encode({entry = entry, state = state, deadLetter = deadLetter,
    deadLetterStream = dlStream, since = since, current = ''}))
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
  block.state = 'releasing'
  block.current = id
  redis.call('HSET', hash, key, cjson.encode(block))
  return id
end
`;

/**
 * Run or hold, before a block-key handler runs an entry. KEYS[1] stream, KEYS[2] blocked-keys
 * hash, KEYS[3] the key's held stream; ARGV group, consumer, id, ordering key → 'run' (the key
 * is not blocked), 'blocker' (it is, and this is the entry its block waits for), 'held' (copied
 * to the held stream and acked, one step), 'lost' (this consumer does not own the entry).
 * An entry trimmed away since its read runs: holding nothing would lose it.
 */
export const RUN_OR_HOLD = `${BLOCK_HELPERS}
local block = blockOf(KEYS[2], ARGV[4])
if not block then return 'run' end
if mayRun(block, KEYS[1], ARGV[3]) then return 'blocker' end
local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)[1]
if not row or row[2] ~= ARGV[2] then return 'lost' end
local entry = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])[1]
if not entry then return 'run' end
local args = {'XADD', KEYS[3], '*'}
local heldFrom = ARGV[3]
local f = entry[2]
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
 * hash; ARGV id, ordering key → 1 when the key is now blocked by it ('failing'), 0 when another
 * entry blocks the key (this one ran before that block began: it leaves it alone). A block keeps
 * its `since` when its blocker changes (a held copy or a re-drive failing again).
 */
export const MARK_KEY_FAILING = `${BLOCK_HELPERS}
local block = blockOf(KEYS[2], ARGV[2])
local since = nowMs()
if block then
  if not mayRun(block, KEYS[1], ARGV[1]) then return 0 end
  since = block.since or since
end
saveBlock(KEYS[2], ARGV[2], ARGV[1], 'failing', '', '', since)
return 1`;

/**
 * The park of a block-key handler's entry: DEAD_LETTER_IF_OWNED (same ARGV after the first) and,
 * in the same script, the key's block becomes 'parked' with the dead letter's id. KEYS[1] stream,
 * KEYS[2] dead-letter stream, KEYS[3] blocked-keys hash; ARGV[1] the ordering key. One script: a
 * crash between the two would leave a block whose re-drive it could not recognise.
 */
export const PARK_AND_BLOCK = `${BLOCK_HELPERS}
local blockKey = table.remove(ARGV, 1)
local function park()
${DEAD_LETTER_IF_OWNED}
end
local id = park()
if id then
  local block = blockOf(KEYS[3], blockKey)
  local since = nowMs()
  if block then
    if not mayRun(block, KEYS[1], ARGV[3]) then return id end
    since = block.since or since
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
 * id of the released copy, added to the stream for this group only (`nrs:group`).
 */
export const ACK_AND_RELEASE = `${BLOCK_HELPERS}
if ARGV[5] ~= '0' then
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)[1]
  if not row or row[2] ~= ARGV[2] then return false end
end
local block = blockOf(KEYS[2], ARGV[4])
local mine = block and mayRun(block, KEYS[1], ARGV[3])
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
if not mine then return '' end
return releaseNext(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[4], block)`;

/**
 * An operator releases a blocked key. KEYS[1] stream, KEYS[2] blocked-keys hash, KEYS[3] the key's
 * held stream, KEYS[4] dead-letter stream; ARGV group, ordering key, dead-letter id ('' = release
 * whatever blocks the key). With a dead-letter id, that dead letter is deleted in the same script
 * (a discard) and the key released only when it is what blocks it, so a crash cannot discard the
 * blocker and leave its key blocked. → {dead letters deleted (0/1), released}: released is
 * 'not-blocked' (nothing released), '' (none waited: the key is free now) or the released copy's id.
 */
export const RELEASE_BLOCKED_KEY = `${BLOCK_HELPERS}
local deleted = 0
if ARGV[3] ~= '' then deleted = redis.call('XDEL', KEYS[4], ARGV[3]) end
local block = blockOf(KEYS[2], ARGV[2])
if not block or (ARGV[3] ~= '' and block.deadLetter ~= ARGV[3]) then return {deleted, 'not-blocked'} end
return {deleted, releaseNext(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], block)}`;
