/**
 * Renews, reschedules or hands back entries only while this consumer owns them (lease renewal,
 * retry back-off, shutdown): XCLAIM takes the entry from whoever holds it.
 *
 * KEYS[1] stream
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] idle time to set (ms), ARGV[4] delivery count to set
 *         (-1 keeps it), ARGV[5..] ids
 * Returns { ids owned by someone else or no longer pending, owned ids whose payload was trimmed }.
 *
 * XCLAIM ... JUSTID does not count a delivery. It silently drops PEL entries whose payload is
 * gone (Redis ≥ 7), so the script compares what it asked for with what XCLAIM returned: those
 * entries must get a tombstone, or they would vanish without a trace.
 */
export const CLAIM_OWNED_BODY = `
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
`;

export const CLAIM_IF_OWNED = `${CLAIM_OWNED_BODY}return {lost, trimmed}`;
