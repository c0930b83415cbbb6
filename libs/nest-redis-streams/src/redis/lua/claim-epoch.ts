import { CHECKED_ACK } from './ack-if-owned.js';

// The claim epoch of a stream's group: a hash beside the stream (keys/claim-epoch-keys.ts) whose
// field `n` changes whenever an entry may have changed owner. Every claim the library makes of
// another consumer's entries raises it in the same script as the claim; an ack batch whose
// entries were all read under the epoch Redis still holds can therefore skip the owner check
// (nobody can have taken them since) and send one plain multi-id XACK. See docs/RELIABILITY.md,
// "Cheap acks".
//
// A missing `n` (new group, or the hash lost: restart without persistence, eviction, DEL) is set
// to Redis' clock in microseconds, never to a small number: a counter restarting at 1 could meet
// a value read before the loss again and wrongly allow the fast path. Field `claim-reads` marks a
// group a 0.2 consumer read with a blocking XREADGROUP … CLAIM (8.4+), which claims without a
// script around it: nothing raised the epoch for those claims, so the fast path is off for the
// group while the mark is there. This version's CLAIM reads run in a script (claim-read.ts).

/** Lua: `bumpClaimEpoch(key)` raises the epoch in `key` (setting it from the clock when missing). */
export const BUMP_CLAIM_EPOCH = `
local function bumpClaimEpoch(key)
  if redis.call('HEXISTS', key, 'n') == 1 then
    redis.call('HINCRBY', key, 'n', 1)
  else
    local t = redis.call('TIME')
    redis.call('HSET', key, 'n', t[1] .. string.format('%06d', tonumber(t[2])))
  end
end
`;

/**
 * Lua: `currentClaimEpoch(key)` → the epoch in `key` ('' while the hash carries the `claim-reads`
 * mark of 0.2's unscripted CLAIM reads) and whether it was missing, then set from the clock.
 */
export const CURRENT_CLAIM_EPOCH = `
local function currentClaimEpoch(key)
  local row = redis.call('HMGET', key, 'n', 'claim-reads')
  local epoch, recreated = row[1], false
  if not epoch then
    local t = redis.call('TIME')
    epoch = t[1] .. string.format('%06d', tonumber(t[2]))
    redis.call('HSET', key, 'n', epoch)
    recreated = true
  end
  if row[2] then epoch = '' end
  return epoch, recreated
end
`;

/**
 * Ack under a claim epoch: the plain XACK when nothing can have been claimed since the ids were
 * read, else the owner check.
 *
 * KEYS[1] stream, KEYS[2] claim epoch hash
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] smallest id, ARGV[4] largest id,
 * ARGV[5] the epoch every id was read under ('' when unknown or mixed), ARGV[6..] ids
 * Returns { epoch now ('' while the group has CLAIM reads), ids acked (count), ids not acked... }.
 * The caller stamps reads it sends after this answer with the epoch. On the plain path an id that
 * is not pending at all (an operator acked it, its consumer was deleted) is not listed as not
 * acked: nobody owns it, so acking it changes nothing; the count is XACK's own.
 */
export const ACK_UNDER_EPOCH = `
${CURRENT_CLAIM_EPOCH}
local readUnder = table.remove(ARGV, 5)
local epoch, recreated = currentClaimEpoch(KEYS[2])
if recreated then readUnder = '' end
if readUnder ~= '' and readUnder == epoch then
  local acked = 0
  for i = 5, #ARGV, 1000 do
    acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  return {epoch, acked}
end
${CHECKED_ACK}
return {epoch, #owned, unpack(lost)}`;

/**
 * XAUTOCLAIM … JUSTID that raises the claim epoch when it took (or dropped) anything.
 * KEYS[1] stream, KEYS[2] claim epoch hash; ARGV group, consumer, min idle ms, cursor, count
 * → XAUTOCLAIM's reply.
 */
export const AUTOCLAIM_COUNTED = `${BUMP_CLAIM_EPOCH}
local reply = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4], 'COUNT', ARGV[5], 'JUSTID')
if #reply[2] > 0 or #(reply[3] or {}) > 0 then bumpClaimEpoch(KEYS[2]) end
return reply`;

/**
 * Lua: `claimCounted(group, to, ids)` XCLAIM … JUSTID (min idle 0) of KEYS[1], raising the epoch in
 * KEYS[2] → the ids claimed, and the ids left alone because their entry is gone from the stream
 * (trimmed, XDEL). XCLAIM would drop those from the PEL without a word (Redis 7.0+, Valkey too),
 * and the PEL row is the only record that they were never handled: the caller writes their
 * `payload-trimmed` tombstone (the park script) or refuses, and nothing vanishes.
 */
const CLAIM_AND_COUNT = `${BUMP_CLAIM_EPOCH}
local function claimCounted(group, to, ids)
  local args, gone = {'XCLAIM', KEYS[1], group, to, 0}, {}
  for i = 1, #ids do
    if redis.call('XRANGE', KEYS[1], ids[i], ids[i])[1] then args[#args + 1] = ids[i] else gone[#gone + 1] = ids[i] end
  end
  if #args == 5 then return {}, gone end
  args[#args + 1] = 'JUSTID'
  local claimed = redis.call(unpack(args))
  if #claimed > 0 then bumpClaimEpoch(KEYS[2]) end
  return claimed, gone
end
`;

/**
 * XCLAIM … JUSTID (min idle 0) of whoever holds the ids, raising the claim epoch when it took
 * anything. KEYS[1] stream, KEYS[2] claim epoch hash; ARGV group, new owner, ids… → the ids
 * claimed (an id whose entry is gone from the stream stays pending where it was: see claimCounted).
 */
export const CLAIM_COUNTED = `${CLAIM_AND_COUNT}
return (claimCounted(ARGV[1], ARGV[2], {unpack(ARGV, 3)}))`;

/**
 * CLAIM_COUNTED of the ids `from` still holds: the console's and CLI's moves of entries between
 * consumers. Their owner is read before the move, and the claim must not take an entry that
 * another consumer reclaimed (and runs) or that left the PEL since: checked in the same script.
 * KEYS[1] stream, KEYS[2] claim epoch hash; ARGV group, from, new owner, ids… → {ids claimed,
 * ids `from` still holds whose entry is gone from the stream (not claimed: see claimCounted)}.
 */
export const CLAIM_FROM_COUNTED = `${CLAIM_AND_COUNT}
local held = {}
for i = 4, #ARGV do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)[1]
  if row and row[2] == ARGV[2] then held[#held + 1] = ARGV[i] end
end
local claimed, gone = claimCounted(ARGV[1], ARGV[3], held)
return {claimed, gone}`;

/**
 * XGROUP SETID that raises the claim epoch: moved back, the group's next `>` reads deliver entries
 * again, and one still pending with a consumer changes owner to the reader without any claim.
 * KEYS[1] stream, KEYS[2] claim epoch hash; ARGV group, id → OK.
 */
export const SETID_COUNTED = `${BUMP_CLAIM_EPOCH}
local reply = redis.call('XGROUP', 'SETID', KEYS[1], ARGV[1], ARGV[2])
bumpClaimEpoch(KEYS[2])
return reply`;
