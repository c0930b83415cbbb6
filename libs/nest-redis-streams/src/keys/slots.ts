import { createRequire } from 'node:module';

// cluster-key-slot is what ioredis itself uses to route commands, so slots agree with it.
const keySlot = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

/** Redis Cluster hash slot of a key (honours `{hash tags}`). */
export function slotOf(key: string): number {
  return keySlot(key);
}

/** True when the key has a non-empty `{...}` hash tag. */
export function hasHashTag(key: string): boolean {
  const open = key.indexOf('{');
  if (open < 0) return false;
  const close = key.indexOf('}', open + 1);
  return close > open + 1;
}

/**
 * `<key>:<suffix>` in the same hash slot as `key`: beside its own tag when it has one, else with
 * `{key}` as the tag (braces inside the name left out, as a stray `}` would end the tag early).
 */
export function keyBeside(key: string, suffix: string): string {
  return hasHashTag(key) ? `${key}:${suffix}` : `{${key.replace(/[{}]/g, '')}}:${suffix}`;
}
