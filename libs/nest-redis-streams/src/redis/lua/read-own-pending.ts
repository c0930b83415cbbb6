/**
 * Reads a consumer's own pending entries without counting a delivery (XREADGROUP with an id
 * raises the count of every entry it returns, also of entries this process is still running).
 *
 * KEYS[1] stream
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] exclusive start id ('-' from the beginning), ARGV[4] count
 * Returns { {id, deliveries, fields | false}, ... } in id order; fields are false when trimming
 * deleted the payload of a still-pending entry.
 */
export const READ_OWN_PENDING = `
local start = ARGV[3] == '-' and '-' or '(' .. ARGV[3]
local rows = redis.call('XPENDING', KEYS[1], ARGV[1], start, '+', tonumber(ARGV[4]), ARGV[2])
local out = {}
for i, row in ipairs(rows) do
  local entry = redis.call('XRANGE', KEYS[1], row[1], row[1])[1]
  out[i] = {row[1], row[4], entry and entry[2] or false}
end
return out`;
