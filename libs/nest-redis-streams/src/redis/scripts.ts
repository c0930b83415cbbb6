import type { Redis } from 'ioredis';

// Ownership checks read the PEL inside the script, so the check and the write are atomic: an old
// owner can never ack, renew or park an entry that another consumer reclaimed in between
// (XACK/XCLAIM take no consumer name and would happily act on someone else's entry).

/**
 * KEYS[1] stream; ARGV group, consumer, idleMs, ids... → { ids owned by someone else, ids whose
 * payload was trimmed }. XCLAIM silently drops PEL entries whose payload is gone (Redis ≥ 7), so
 * the script compares what it asked for with what XCLAIM returned: those entries must get a
 * tombstone, or they would vanish without a trace.
 */
const CLAIM_IF_OWNED = `
local owned, lost, trimmed, claimed = {}, {}, {}, {}
for i = 4, #ARGV do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)[1]
  if row and row[2] == ARGV[2] then owned[#owned + 1] = ARGV[i] else lost[#lost + 1] = ARGV[i] end
end
for i = 1, #owned, 1000 do
  local args = {'XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0}
  for j = i, math.min(i + 999, #owned) do args[#args + 1] = owned[j] end
  args[#args + 1] = 'IDLE'; args[#args + 1] = ARGV[3]; args[#args + 1] = 'JUSTID'
  for _, id in ipairs(redis.call(unpack(args))) do claimed[id] = true end
end
for _, id in ipairs(owned) do if not claimed[id] then trimmed[#trimmed + 1] = id end end
return {lost, trimmed}`;

/** KEYS[1] stream; ARGV group, consumer, ids... → ids this consumer no longer owns (not acked). */
const ACK_IF_OWNED = `
local owned, lost = {}, {}
for i = 3, #ARGV do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)[1]
  if row and row[2] == ARGV[2] then owned[#owned + 1] = ARGV[i] else lost[#lost + 1] = ARGV[i] end
end
for i = 1, #owned, 1000 do
  redis.call('XACK', KEYS[1], ARGV[1], unpack(owned, i, math.min(i + 999, #owned)))
end
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

/** KEYS[1] stream; ARGV group, consumer → 1 when deleted, 0 when it still has pending entries. */
const DELETE_CONSUMER_IF_IDLE = `
local pending = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2])
if #pending > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1`;

/** The commands the scripts above add to a connection. */
export interface StreamScripts {
  nrsClaimIfOwned(
    stream: string, group: string, consumer: string, idleMs: number, ...ids: string[]
  ): Promise<[lost: string[], trimmed: string[]]>;
  nrsAckIfOwned(stream: string, group: string, consumer: string, ...ids: string[]): Promise<string[]>;
  nrsDeadLetterIfOwned(
    stream: string, dlq: string, group: string, consumer: string, id: string, requireOwner: '1' | '0', ...fields: string[]
  ): Promise<string | null>;
  nrsDeleteConsumerIfIdle(stream: string, group: string, consumer: string): Promise<number>;
}

export type ScriptedRedis = Redis & StreamScripts;

/** Registers the scripts on a connection (EVALSHA with EVAL fallback, handled by ioredis). */
export function withStreamScripts(redis: Redis): ScriptedRedis {
  redis.defineCommand('nrsClaimIfOwned', { numberOfKeys: 1, lua: CLAIM_IF_OWNED });
  redis.defineCommand('nrsAckIfOwned', { numberOfKeys: 1, lua: ACK_IF_OWNED });
  redis.defineCommand('nrsDeadLetterIfOwned', { numberOfKeys: 2, lua: DEAD_LETTER_IF_OWNED });
  redis.defineCommand('nrsDeleteConsumerIfIdle', { numberOfKeys: 1, lua: DELETE_CONSUMER_IF_IDLE });
  return redis as ScriptedRedis;
}
