import type { ScriptedRedis } from '../redis/scripts.js';
import type { PartitionFence } from './partition-fence.js';

// The writes of a consumer, fenced when its partition is owned exclusively. Without a fence they
// are exactly the unfenced scripts with their own arguments, so shared consumption is unchanged.
// With a fence but no generation held, nothing is sent: the entries are not this instance's.

/** nrsClaimIfOwned, fenced when `fence` is given. */
export function claimIfOwned(
  redis: ScriptedRedis,
  fence: PartitionFence | undefined,
  stream: string,
  group: string,
  consumer: string,
  idleMs: number,
  retryCount: number,
  ids: string[],
): Promise<[lost: string[], trimmed: string[]]> {
  if (!fence) return redis.nrsClaimIfOwned(stream, group, consumer, idleMs, retryCount, ...ids);
  const generation = fence.generation;
  if (generation === null) return Promise.resolve([ids, []]);
  const { ownerKey, member } = fence;
  return redis.nrsClaimIfOwnedFenced(stream, ownerKey, member, generation, group, consumer, idleMs, retryCount, ...ids);
}

/** nrsAckIfOwned, fenced when `fence` is given; resolves with the ids not acked. */
export function ackIfOwned(
  redis: ScriptedRedis,
  fence: PartitionFence | undefined,
  stream: string,
  group: string,
  consumer: string,
  smallest: string,
  largest: string,
  ids: string[],
): Promise<string[]> {
  if (!fence) return redis.nrsAckIfOwned(stream, group, consumer, smallest, largest, ...ids);
  const generation = fence.generation;
  if (generation === null) return Promise.resolve([...new Set(ids)]);
  const { ownerKey, member } = fence;
  return redis.nrsAckIfOwnedFenced(stream, ownerKey, member, generation, group, consumer, smallest, largest, ...ids);
}

/** nrsDeadLetterIfOwned, fenced when `fence` is given; null when not owned. */
export function deadLetterIfOwned(
  redis: ScriptedRedis,
  fence: PartitionFence | undefined,
  stream: string,
  dlq: string,
  group: string,
  consumer: string,
  id: string,
  requireOwner: '1' | '0',
  rest: string[],
): Promise<string | null> {
  if (!fence) return redis.nrsDeadLetterIfOwned(stream, dlq, group, consumer, id, requireOwner, ...rest);
  const generation = fence.generation;
  if (generation === null) return Promise.resolve(null);
  const { ownerKey, member } = fence;
  return redis.nrsDeadLetterIfOwnedFenced(stream, dlq, ownerKey, member, generation, group, consumer, id, requireOwner, ...rest);
}
