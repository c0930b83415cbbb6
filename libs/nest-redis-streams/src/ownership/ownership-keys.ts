import { hasHashTag } from '../redis/slots.js';

/** A key in the same hash slot as `key`: its own tag when it has one, else `{key}` as the tag. */
function besideKey(key: string, suffix: string): string {
  return hasHashTag(key) ? `${key}:${suffix}` : `{${key.replace(/[{}]/g, '')}}:${suffix}`;
}

/**
 * The owner hash of one partition stream in one group (owner, gen, until). It shares the
 * partition's hash slot, so every fenced write is a single-slot script on a cluster. It never
 * expires: its generation must only ever grow.
 */
export function partitionOwnerKey(stream: string, group: string): string {
  return besideKey(stream, `nrs-owner:${group}`);
}

/** The members (instances with a heartbeat) of a group sharing the partitions of a logical stream. */
export function groupMembersKey(baseStream: string, group: string): string {
  return besideKey(baseStream, `nrs-members:${group}`);
}
