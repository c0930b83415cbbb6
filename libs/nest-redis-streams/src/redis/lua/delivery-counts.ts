/**
 * Delivery counts of entries, whoever holds them.
 *
 * KEYS[1] stream
 * ARGV[1] group, ARGV[2..] ids
 * Returns one count per id, in order; 0 when the id is not pending (acked meanwhile: not a
 * first delivery).
 *
 * One XPENDING per id: a range query for a consumer can be cut short by its other pending entries.
 */
export const DELIVERY_COUNTS = `
local counts = {}
for i = 2, #ARGV do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)[1]
  counts[#counts + 1] = row and row[4] or 0
end
return counts`;
