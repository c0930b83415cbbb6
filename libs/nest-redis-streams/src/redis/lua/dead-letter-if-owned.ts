/**
 * KEYS[1] stream, KEYS[2] dead-letter stream; ARGV group, consumer, id, requireOwner (1/0),
 * metadata count n, n metadata fields (name, value...), then the fallback payload (name,
 * value..., names already escaped) → the dead-letter entry id, or false when this consumer does
 * not own the entry.
 *
 * The payload is copied inside Redis from the entry itself (XRANGE id id): Lua strings are bytes,
 * while the consumer holds the fields as UTF-8-decoded strings, so a Protobuf or MessagePack
 * value rebuilt in JS would come back with U+FFFD where its bytes were. Only when the entry is
 * already gone from the stream (trimmed while held) is the fallback from memory used: it is all
 * that is left. A name starting with `dlq:` or `orig:` gets `orig:` put in front, so the metadata
 * stays apart and a re-drive can strip exactly one `orig:` (see redrive-dead-letter.ts).
 * XADD and XACK in one script: the entry is never in both places, nor in neither.
 */
export const DEAD_LETTER_IF_OWNED = `
if ARGV[4] == '1' then
  local row = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)[1]
  if not row or row[2] ~= ARGV[2] then return false end
end
local args = {'XADD', KEYS[2], '*'}
local metaEnd = 5 + tonumber(ARGV[5])
for i = 6, metaEnd do args[#args + 1] = ARGV[i] end
local entry = redis.call('XRANGE', KEYS[1], ARGV[3], ARGV[3])[1]
if entry then
  local fields = entry[2]
  for i = 1, #fields - 1, 2 do
    local name = fields[i]
    if string.sub(name, 1, 4) == 'dlq:' or string.sub(name, 1, 5) == 'orig:' then name = 'orig:' .. name end
    args[#args + 1] = name
    args[#args + 1] = fields[i + 1]
  end
else
  for i = metaEnd + 1, #ARGV do args[#args + 1] = ARGV[i] end
end
local id = redis.call(unpack(args))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
return id`;
