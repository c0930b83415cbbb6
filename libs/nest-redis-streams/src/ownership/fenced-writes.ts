import type { ScriptedRedis } from '../redis/scripts.js';
import type { PartitionFence } from './partition-fence.js';

// The writes of a consumer, fenced when its partition is owned exclusively. Without a fence they
// are exactly the unfenced scripts with their own arguments, so shared consumption is unchanged.
// With a fence but no generation held, nothing is sent: the entries are not this instance's.
//
// FENCED: Redis refused the generation (the lease had run out by its clock, or another
// instance owns the partition now). That says nothing about the entries yet: if nobody took the
// partition, the next renewal keeps the generation and the write may be sent again; if somebody
// did, the coordinator finds out and the consumer drops the partition (see README, "Exclusive
// ownership"). Callers must not read it as "the entry belongs to another consumer".

/** Redis refused the write's generation; see above. */
export const FENCED: unique symbol = Symbol('fenced');
export type Fenced = typeof FENCED;

/** nrsClaimIfOwned, fenced when `fence` is given. */
export async function claimIfOwned(
  redis: ScriptedRedis,
  fence: PartitionFence | undefined,
  stream: string,
  group: string,
  consumer: string,
  idleMs: number,
  retryCount: number,
  ids: string[],
): Promise<[lost: string[], trimmed: string[]] | Fenced> {
  if (!fence) return redis.nrsClaimIfOwned(stream, group, consumer, idleMs, retryCount, ...ids);
  const generation = fence.generation;
  if (generation === null) return [ids, []];
  const { ownerKey, member } = fence;
  const reply = await redis.nrsClaimIfOwnedFenced(
    stream,
    ownerKey,
    member,
    generation,
    group,
    consumer,
    idleMs,
    retryCount,
    ...ids,
  );
  return reply ?? FENCED;
}

/** nrsAckIfOwned, fenced when `fence` is given; resolves with the ids not acked. */
export async function ackIfOwned(
  redis: ScriptedRedis,
  fence: PartitionFence | undefined,
  stream: string,
  group: string,
  consumer: string,
  smallest: string,
  largest: string,
  ids: string[],
): Promise<string[] | Fenced> {
  if (!fence) return redis.nrsAckIfOwned(stream, group, consumer, smallest, largest, ...ids);
  const generation = fence.generation;
  if (generation === null) return [...new Set(ids)];
  const { ownerKey, member } = fence;
  const reply = await redis.nrsAckIfOwnedFenced(stream, ownerKey, member, generation, group, consumer, smallest, largest, ...ids);
  return reply ?? FENCED;
}

/** nrsDeadLetterIfOwned, fenced when `fence` is given; null when not owned. */
export async function deadLetterIfOwned(
  redis: ScriptedRedis,
  fence: PartitionFence | undefined,
  stream: string,
  dlq: string,
  group: string,
  consumer: string,
  id: string,
  requireOwner: '1' | '0',
  rest: string[],
): Promise<string | null | Fenced> {
  if (!fence) return redis.nrsDeadLetterIfOwned(stream, dlq, group, consumer, id, requireOwner, ...rest);
  const generation = fence.generation;
  if (generation === null) return null;
  const { ownerKey, member } = fence;
  const reply = await redis.nrsDeadLetterIfOwnedFenced(
    stream,
    dlq,
    ownerKey,
    member,
    generation,
    group,
    consumer,
    id,
    requireOwner,
    ...rest,
  );
  return reply === 0 ? FENCED : reply;
}
