import type { Cluster, Redis } from 'ioredis';
import { blockedKeysKey, heldEntriesKey } from '../../libs/nest-redis-streams/src/keys/index.js';

/** A blocked key as the engine records it (docs: BLOCK-KEY layout), seeded straight into Redis. */
export interface SeededBlock {
  stream: string;
  group: string;
  key: string;
  state: 'failing' | 'parked' | 'releasing';
  entry: string;
  since: number;
  deadLetter?: string;
  deadLetterStream?: string;
  current?: string;
  /** Held entries to add behind the key (their `data` fields). */
  held?: string[];
}

/**
 * Writes the block record (HSET of the JSON) and the held entries (XADD with `nrs:held_from`) the
 * way the block-key engine lays them out, so the read side is tested without running handlers.
 */
export async function seedBlockedKey(redis: Redis | Cluster, block: SeededBlock): Promise<void> {
  const record = {
    entry: block.entry,
    deadLetter: block.deadLetter ?? '',
    deadLetterStream: block.deadLetterStream ?? '',
    since: block.since,
    state: block.state,
    current: block.current ?? '',
  };
  await redis.hset(blockedKeysKey(block.stream, block.group), block.key, JSON.stringify(record));
  for (const [i, data] of (block.held ?? []).entries()) {
    await redis.xadd(heldEntriesKey(block.stream, block.group, block.key), '*', 'data', data, 'nrs:held_from', `${i + 1}-0`);
  }
}

/** Removes what seedBlockedKey wrote for one key (the engine's release does the same when drained). */
export async function clearBlockedKey(redis: Redis | Cluster, stream: string, group: string, key: string): Promise<void> {
  await redis.hdel(blockedKeysKey(stream, group), key);
  await redis.del(heldEntriesKey(stream, group, key));
}
