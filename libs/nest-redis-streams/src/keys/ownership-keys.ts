import { keyBeside } from './slots.js';

/**
 * The owner hash of one partition stream in one group (owner, gen, until). It shares the
 * partition's hash slot, so every fenced write is a single-slot script on a cluster. It never
 * expires: its generation must only ever grow.
 */
export function partitionOwnerKey(stream: string, group: string): string {
  return keyBeside(stream, `nrs-owner:${group}`);
}

/** The members (instances with a heartbeat) of a group sharing the partitions of a logical stream. */
export function groupMembersKey(baseStream: string, group: string): string {
  return keyBeside(baseStream, `nrs-members:${group}`);
}
