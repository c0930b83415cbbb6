import { keyBeside } from './slots.js';

// `onDeadLetter: 'block-key'` (docs/handlers.md, "Order that survives the dead-letter stream"):
// both keys sit in the stream's hash slot, so the scripts that hold, park and release an entry of
// a blocked key touch the stream, the block and the held entries atomically on a cluster too.

/**
 * The blocked ordering keys of `group` on `stream`: a hash, field = the ordering key, value = JSON
 * `{ entry, deadLetter, deadLetterStream, since, state, current }` (see redis/lua/block-key.ts).
 */
export function blockedKeysKey(stream: string, group: string): string {
  return keyBeside(stream, `nrs-blocked:${group}`);
}

/**
 * The entries of ordering key `key` held behind its block, in arrival order: a stream of the
 * original fields plus `nrs:held_from` (the original entry id). Deleted once drained. The group
 * name is length-prefixed: both names may hold ':', and group "a" with key "b:c" must not share
 * a held stream with group "a:b" and key "c".
 */
export function heldEntriesKey(stream: string, group: string, key: string): string {
  return keyBeside(stream, `nrs-held:${group.length}:${group}:${key}`);
}
