import { BUMP_CLAIM_EPOCH, CURRENT_CLAIM_EPOCH } from './claim-epoch.js';

/**
 * A non-blocking `XREADGROUP … CLAIM <min-idle>` (Redis 8.4+) that raises the group's claim epoch
 * in the same script when it took over anything, so reads stay stamped and acks stay plain XACKs
 * on servers with CLAIM (see claim-epoch.ts). A blocking read cannot run in a script; the read loop
 * blocks on a plain `>` read instead, no longer than this script's wait hint.
 *
 * KEYS[1] stream, KEYS[2] claim epoch hash
 * ARGV[1] group, ARGV[2] consumer, ARGV[3] count, ARGV[4] min idle ms
 * Returns { epoch, entries, wait }:
 * - epoch: the claim epoch after the read ('' while the hash carries the `claim-reads` mark an
 *   earlier version's unscripted CLAIM reads set: acks of the group stay checked);
 * - entries: the stream's entries as XREADGROUP … CLAIM gives them (id, fields, idle, delivered before);
 * - wait: with no entries, how long until the oldest pending entry, held by another consumer,
 *   becomes claimable (ms, at least 1); -1 when that is unknown (nothing pending, it is this
 *   consumer's own, or it is past min-idle yet was not claimed: its payload was trimmed).
 */
export const CLAIM_READ_COUNTED = `${BUMP_CLAIM_EPOCH}${CURRENT_CLAIM_EPOCH}
local reply = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', ARGV[3], 'CLAIM', ARGV[4], 'STREAMS', KEYS[1], '>')
local entries = {}
if reply then entries = reply[1][2] end
for _, entry in ipairs(entries) do
  if tonumber(entry[4]) > 0 then
    bumpClaimEpoch(KEYS[2])
    break
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
