/**
 * Fencing for exclusive partition ownership (see ownership/). A fenced variant of a script gets
 * the partition's owner hash as its LAST key and the caller's member id and generation as its
 * first two ARGV; this prelude checks them and removes them, so the script's own body reads its
 * ARGV exactly as in its unfenced contract.
 *
 * The caller may write only while the hash names it as owner with the same generation and the
 * lease has not run out by Redis' own clock: an instance that was paused past its lease, or cut
 * off from Redis while another took the partition over, is refused in the same script as the
 * write, so no check-then-write race exists.
 */
export const FENCE_PRELUDE = `
local fenceMember = table.remove(ARGV, 1)
local fenceGeneration = table.remove(ARGV, 1)
local fenceRow = redis.call('HMGET', KEYS[#KEYS], 'owner', 'gen', 'until')
local fenceClock = redis.call('TIME')
local fenceNow = tonumber(fenceClock[1]) * 1000 + math.floor(tonumber(fenceClock[2]) / 1000)
local fenced = fenceRow[1] ~= fenceMember or fenceRow[2] ~= fenceGeneration or tonumber(fenceRow[3] or '0') < fenceNow
`;

/** A fenced variant of `body`: returns `refused` (a Lua expression) when the fence check fails. */
export function fenced(body: string, refused: string): string {
  return `${FENCE_PRELUDE}if fenced then return ${refused} end\n${body}`;
}
