import type { Cluster, Redis } from 'ioredis';
import { releaseBlockedKey } from '../dead-letter/blocked-key-scripts.js';
import { discardDeadLetter } from '../dead-letter/discard-dead-letter.js';
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
 * Releases `key` of `group` (an operator's escape hatch, e.g. after fixing the data by hand): its
 * next held entry goes back to the stream, or the key is freed when none waits. Refused (not
 * found) when the key is not blocked; refused while its blocker is still retried (`failing`) or a
 * released entry runs (`releasing`), unless `force`: the next entry would run beside that one.
 */
export async function releaseKey(
  redis: Redis | Cluster,
  where: { stream: string; group: string; deadLetterStream: string },
  key: string,
  force = false,
): Promise<BlockedKeyRelease> {
  if (!where.group) throw new OperationError('bad-request', OPERATIONS_MESSAGES.releaseNeedsGroup(where.stream, key));
  const { released, busy } = await releaseBlockedKey(redis, where, key, '', force);
  if (busy) throw new OperationError('refused', OPERATIONS_MESSAGES.keyBusy(where.stream, where.group, key, busy));
  if (released === false)
    throw new OperationError('not-found', OPERATIONS_MESSAGES.keyNotBlocked(where.stream, where.group, key));
  return { key, released };
}

/** Deletes a dead letter; one that blocks its ordering key releases it in the same script. */
export async function discardOne(redis: Redis | Cluster, deadLetterStream: string, id: string): Promise<DiscardResult> {
  const { deleted, released } = await discardDeadLetter(redis, deadLetterStream, id);
  if (!deleted) throw new OperationError('not-found', OPERATIONS_MESSAGES.noDeadLetter(deadLetterStream, id));
  return released ? { discarded: id, released } : { discarded: id };
}
