import { keyBeside } from './slots.js';

/**
 * Hash of the ordering keys blocked in `group` of `stream` (`onDeadLetter: 'block-key'`): field =
 * the ordering key, value = JSON of what blocks it. In the stream's hash slot, so the scripts that
 * hold, park and release touch one slot.
 */
export function blockedKeysKey(stream: string, group: string): string {
  return keyBeside(stream, `nrs-blocked:${group}`);
}

/**
 * Stream of the entries of ordering key `key` held back in `group` while the key is blocked, in
 * arrival order (each with `nrs:held_from` = its original id); deleted when drained.
 */
export function heldEntriesKey(stream: string, group: string, key: string): string {
  return keyBeside(stream, `nrs-held:${group}:${key}`);
}
