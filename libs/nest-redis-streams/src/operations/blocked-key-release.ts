import type { Cluster, Redis } from 'ioredis';
import { ENVELOPE } from '../constants.js';
import { releaseBlockedKey } from '../dead-letter/blocked-key-scripts.js';
import { DLQ_FIELDS } from '../dead-letter/index.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';

/** What releasing a blocked key did: the held copy now running, or null when none waited (the key is free). */
export interface BlockedKeyRelease {
  key: string;
  released: string | null;
}

/** What a discard did; `released` only when the dead letter blocked an ordering key (`onDeadLetter: 'block-key'`). */
export interface DiscardResult {
  discarded: string;
  released?: BlockedKeyRelease;
}

/**
 * Releases `key` of `group` whatever blocks it (an operator's escape hatch, e.g. after fixing the
 * data by hand): its next held entry goes back to the stream, or the key is freed when none waits.
 * Refused (not found) when the key is not blocked.
 */
export async function releaseKey(
  redis: Redis | Cluster,
  where: { stream: string; group: string; deadLetterStream: string },
  key: string,
): Promise<BlockedKeyRelease> {
  if (!where.group) throw new OperationError('bad-request', OPERATIONS_MESSAGES.releaseNeedsGroup(where.stream, key));
  const { released } = await releaseBlockedKey(redis, where, key);
  if (released === false)
    throw new OperationError('not-found', OPERATIONS_MESSAGES.keyNotBlocked(where.stream, where.group, key));
  return { key, released };
}

/**
 * Deletes a dead letter for good. When it is what blocks its ordering key (its `nrs:blocked_key`),
 * the key is released in the same script: the next held entry runs, or the key is free.
 */
export async function discardDeadLetter(redis: Redis | Cluster, deadLetterStream: string, id: string): Promise<DiscardResult> {
  const [entry] = await redis.xrange(deadLetterStream, id, id);
  if (!entry) throw new OperationError('not-found', OPERATIONS_MESSAGES.noDeadLetter(deadLetterStream, id));
  const field = (name: string) => {
    const fields = entry[1];
    for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
    return undefined;
  };
  const key = field(ENVELOPE.blockedKey);
  const [stream, group] = [field(DLQ_FIELDS.stream), field(DLQ_FIELDS.group)];
  if (key === undefined || !stream || !group) {
    if ((await redis.xdel(deadLetterStream, id)) !== 1) {
      throw new OperationError('not-found', OPERATIONS_MESSAGES.noDeadLetter(deadLetterStream, id));
    }
    return { discarded: id };
  }
  const { deleted, released } = await releaseBlockedKey(redis, { stream, group, deadLetterStream }, key, id);
  if (!deleted) throw new OperationError('not-found', OPERATIONS_MESSAGES.noDeadLetter(deadLetterStream, id));
  return released === false ? { discarded: id } : { discarded: id, released: { key, released } };
}
