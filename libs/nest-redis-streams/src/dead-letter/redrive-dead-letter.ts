// Evaluated by DeadLetterService alone (not one of the consumer's registered scripts in redis/scripts.ts), so it lives beside it.
/**
 * KEYS[1] dead-letter stream, KEYS[2] the source stream; ARGV dead-letter id, target group ('' =
 * every group), target-group field name, lineage field names (re-driven from, original id) → the
 * new entry id; false when the dead letter is not there (already re-driven or discarded); 0 when
 * it is a tombstone (no payload to re-add).
 *
 * Lineage: the new entry names the dead letter it came from and the id it had when first parked
 * (from an earlier re-drive's field when there was one, else the dead letter's `dlq:id`), so a
 * second failure's dead letter still says where the entry began.
 *
 * The payload is copied inside Redis, byte for byte (a JS round trip would decode it as UTF-8):
 * metadata (`dlq:*`, and `nrs:blocked_key` of a block-key handler's park) is dropped, one `orig:` is stripped from escaped names, and a target-group
 * field from an earlier re-drive is replaced by this one. XADD and XDEL in one script, so a
 * retried call cannot re-add an entry twice: the second finds nothing.
 */
export const REDRIVE_DEAD_LETTER = `
local entry = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])[1]
if not entry then return false end
local fields = entry[2]
local args = {'XADD', KEYS[2], '*'}
local firstId = nil
local parkedId = ''
for i = 1, #fields - 1, 2 do
  if fields[i] == 'dlq:id' then parkedId = fields[i + 1] end
  if fields[i] == ARGV[5] then firstId = fields[i + 1] end
end
for i = 1, #fields - 1, 2 do
  local name = fields[i]
  if string.sub(name, 1, 4) ~= 'dlq:' and name ~= ARGV[3] and name ~= ARGV[4] and name ~= ARGV[5]
    and name ~= 'nrs:blocked_key' then
    if string.sub(name, 1, 5) == 'orig:' then name = string.sub(name, 6) end
    args[#args + 1] = name
    args[#args + 1] = fields[i + 1]
  end
end
if #args == 3 then return 0 end
if ARGV[2] ~= '' then
  args[#args + 1] = ARGV[3]
  args[#args + 1] = ARGV[2]
end
args[#args + 1] = ARGV[4]
args[#args + 1] = ARGV[1]
args[#args + 1] = ARGV[5]
args[#args + 1] = firstId or parkedId
local id = redis.call(unpack(args))
redis.call('XDEL', KEYS[1], ARGV[1])
return id`;
