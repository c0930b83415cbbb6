/**
 * The owner check of an ack, as a Lua fragment of the ack script (claim-epoch.ts): KEYS[1] stream;
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] smallest id, ARGV[4] largest id, ARGV[5..] ids. Acks
 * the ids this consumer still owns (their count in `#owned`) and leaves the others, owned by
 * someone else or no longer pending, in the table `lost`. XACK takes no consumer name, so an old owner
 * would otherwise ack an entry another consumer reclaimed (and is still running).
 *
 * Ownership comes from one consumer-filtered XPENDING range over [smallest, largest], walked in
 * pages of 1000: far cheaper than one XPENDING per id, and exact however many other entries this
 * consumer has pending in that range. The caller finds the bounds; doing it here cost more Redis
 * time than the acks themselves.
 */
export const CHECKED_ACK = `
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
`;
