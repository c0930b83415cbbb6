import type { ChainableCommander } from 'ioredis';
import { DLQ_FIELDS } from '../dead-letter/dead-letter-record.js';

/**
 * KEYS[1] dead-letter stream; ARGV group, limit → {length, records of the group, or -1 when the
 * stream is longer than limit}. One dead-letter stream serves every group of a source stream, so
 * its length alone would charge one group's poison entries to all of them. Counting reads the
 * records inside Redis and returns two numbers; past the limit it would cost too much per probe.
 */
const COUNT_GROUP_DEAD_LETTERS = `
local length = redis.call('XLEN', KEYS[1])
if length == 0 then return {0, 0} end
if length > tonumber(ARGV[2]) then return {length, -1} end
local count = 0
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  local fields, owner = entry[2], nil
  for i = 1, #fields - 1, 2 do
    if fields[i] == '${DLQ_FIELDS.group}' then owner = fields[i + 1]; break end
  end
  -- A record that names no group (written by hand) counts for every group: never hidden.
  if owner == nil or owner == ARGV[1] then count = count + 1 end
end
return {length, count}`;

/** What a dead-letter stream holds, for one group. */
export interface DeadLetterCount {
  /** Records in the dead-letter stream, all groups together (XLEN). */
  length: number;
  /** Records of this group; null when the stream was too long to count. */
  ofGroup: number | null;
}

export function queueDeadLetterCount(pipeline: ChainableCommander, deadLetterStream: string, group: string, limit: number): void {
  pipeline.eval(COUNT_GROUP_DEAD_LETTERS, 1, deadLetterStream, group, limit);
}

export function parseDeadLetterCount(reply: unknown): DeadLetterCount {
  const [length, ofGroup] = (reply as [number, number]).map(Number);
  return { length, ofGroup: ofGroup < 0 ? null : ofGroup };
}
