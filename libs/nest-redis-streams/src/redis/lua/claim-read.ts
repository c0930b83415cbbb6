import { BUMP_CLAIM_EPOCH, CURRENT_CLAIM_EPOCH } from './claim-epoch.js';

/**
 * A non-blocking `XREADGROUP … CLAIM <min-idle>` (Redis 8.4+) that raises the group's claim epoch
 * in the same script when it took over anything, so reads stay stamped and acks stay plain XACKs
 * on servers with CLAIM (see claim-epoch.ts). A blocking read cannot run in a script; the read loop
 * blocks on a plain `>` read instead, no longer than this script's wait hint.
 *
 * CLAIM counts a delivery of every entry it takes over, so the CLAIM read asks for no more than
 * the consumer can start at once (ARGV[5]); a plain `>` read in the same script fills the rest of
 * the count with new entries (read ahead as usual). Redis serves idle entries before new ones, so
 * the plain read runs only when the CLAIM read came back full.
 *
 * KEYS[1] stream, KEYS[2] claim epoch hash
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] count, ARGV[4] min idle ms, ARGV[5] how many of the
 *         count the CLAIM read may take (the rest are new entries only)
 * An entry was taken over when it had a delivery before or was idle (pending with its count
 * given back to 0); a new one has neither.
 * Returns { epoch, entries, wait }:
 * - epoch: the claim epoch after the read ('' while the hash carries the `claim-reads` mark an
 *   earlier version's unscripted CLAIM reads set: acks of the group stay checked);
 * - entries: the stream's entries as XREADGROUP … CLAIM gives them (id, fields, idle, delivered before),
 *   then those of the plain read (id, fields);
 * - wait: with no entries, how long until the oldest pending entry, held by another consumer,
 *   becomes claimable (ms, at least 1); -1 when that is unknown (nothing pending, it is this
 *   consumer's own, or it is past min-idle yet was not claimed: its payload was trimmed).
 */
export const CLAIM_READ_COUNTED = `${BUMP_CLAIM_EPOCH}${CURRENT_CLAIM_EPOCH}
local entries = {}
local claimCount = math.min(tonumber(ARGV[5]), tonumber(ARGV[3]))
if claimCount > 0 then
  local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', claimCount, 'CLAIM', ARGV[4], 'STREAMS', KEYS[1], '>')
  if reply then entries = reply[1][2] end
  for _, entry in ipairs(entries) do
    if tonumber(entry[4]) > 0 or tonumber(entry[3]) > 0 then
      bumpClaimEpoch(KEYS[2])
      break
    end
  end
end
local rest = tonumber(ARGV[3]) - #entries
if rest > 0 and #entries == claimCount then
  local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', rest, 'STREAMS', KEYS[1], '>')
  if reply then
    for _, entry in ipairs(reply[1][2]) do entries[#entries + 1] = entry end
  end
end
local epoch = currentClaimEpoch(KEYS[2])
local wait = -1
if #entries == 0 then
  local oldest = redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1)[1]
  if oldest and oldest[2] ~= ARGV[2] then
    local left = tonumber(ARGV[4]) - tonumber(oldest[3])
    if left > 0 then wait = left end
  end
end
return {epoch, entries, wait}`;
