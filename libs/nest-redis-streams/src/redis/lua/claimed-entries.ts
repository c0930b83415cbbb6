/**
 * The entries a reclaim round just took with XAUTOCLAIM ... JUSTID: delivery count and fields.
 * JUSTID leaves the count alone, so an entry that only waits here for a slot (reclaimed into the
 * reserve) spends no delivery; the consumer counts one right before its handler starts.
 *
 * KEYS[1] stream
 * ARGV[1] group, ARGV[2..] ids
 * Returns { {id, deliveries, fields | false}, ... } in the order of the ids. deliveries is -1 when
 * the id is no longer pending (its previous owner acked or parked it after the claim); fields are
 * false when trimming deleted the payload meanwhile. A count of 0 is a pending entry whose count a
 * deferral or a RetryLater set back from its first delivery (see delivery-policy.ts).
 *
 * One XPENDING per id: a range query for a consumer can be cut short by its other pending entries.
 */
export const CLAIMED_ENTRIES = `
local out = {}
for i = 2, #ARGV do
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)[1]
  local entry = redis.call('XRANGE', KEYS[1], ARGV[i], ARGV[i])[1]
  out[#out + 1] = {ARGV[i], row and row[4] or -1, entry and entry[2] or false}
end
return out`;
