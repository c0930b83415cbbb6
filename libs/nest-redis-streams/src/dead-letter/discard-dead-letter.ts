import type { Cluster, Redis } from 'ioredis';
import { ENVELOPE } from '../constants.js';
import { releaseBlockedKey } from './blocked-key-scripts.js';
import { DLQ_FIELDS } from './dead-letter-record.js';

/** What a discard did: `released` only when the dead letter blocked its ordering key (`onDeadLetter: 'block-key'`). */
export interface DiscardOutcome {
  deleted: boolean;
  /** The blocked key it released: the held copy now running, or null when none waited (the key is free). */
  released?: { key: string; released: string | null };
}

/**
 * Deletes a dead letter for good. When it is what blocks its ordering key (its `nrs:blocked_key`
 * names the key, `dlq:stream` and `dlq:group` where the block is), the delete and the release of
 * the key are one script: the next held entry runs, or the key is free.
 */
export async function discardDeadLetter(redis: Redis | Cluster, deadLetterStream: string, id: string): Promise<DiscardOutcome> {
  const [entry] = await redis.xrange(deadLetterStream, id, id);
  if (!entry) return { deleted: false };
  const field = (name: string) => {
    const fields = entry[1];
    for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
    return undefined;
  };
  const key = field(ENVELOPE.blockedKey);
  const [stream, group] = [field(DLQ_FIELDS.stream), field(DLQ_FIELDS.group)];
  if (key === undefined || !stream || !group) return { deleted: (await redis.xdel(deadLetterStream, id)) === 1 };
  const { deleted, released } = await releaseBlockedKey(redis, { stream, group, deadLetterStream }, key, id);
  return released === false ? { deleted } : { deleted, released: { key, released } };
}
