import type { AckUnderEpochReply, ScriptedRedis } from '../redis/scripts.js';
import type { PartitionFence } from './partition-fence.js';

// The writes of a consumer, fenced when its partition is owned exclusively. Without a fence they
// are exactly the unfenced scripts with their own arguments, so shared consumption is unchanged.
// With a fence but no generation held, nothing is sent: the entries are not this instance's.
//
// FENCED: Redis refused the generation (the lease had run out by its clock, or another
// instance owns the partition now). That says nothing about the entries yet: if nobody took the
// partition, the next renewal keeps the generation and the write may be sent again; if somebody
// did, the coordinator finds out and the consumer drops the partition (see docs/scaling.md, "Ordered
// scale-out"). Callers must not read it as "the entry belongs to another consumer".
//
// The consumer writes through its EntryWrites (consumer/entry-writes.ts), which holds the target
// once; lease renewal (recovery/) passes its RecoveryTarget, which is one.

/** Redis refused the write's generation; see above. */
export const FENCED: unique symbol = Symbol('fenced');
export type Fenced = typeof FENCED;

/** Whose entries a write touches: one consumer of one stream and group, fenced or not. */
export interface WriteTarget {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  /** Exclusive ownership: every write is fenced by the partition's generation. */
  readonly fence?: PartitionFence;
}

/** What a claim answers: the ids another consumer owns now, and those whose payload was trimmed. */
export type ClaimAnswer = [lost: string[], trimmed: string[]];

/** The leading arguments of a fenced script (after its first key), or null while no generation is held. */
export function fenceArgs(fence: PartitionFence): [ownerKey: string, member: string, generation: string] | null {
  const { generation, ownerKey, member } = fence;
  return generation === null ? null : [ownerKey, member, generation];
}

/** nrsClaimIfOwned, fenced when the target has a fence. */
export async function claimIfOwned(
  redis: ScriptedRedis,
  { stream, group, consumer, fence }: WriteTarget,
  idleMs: number,
  retryCount: number,
  ids: string[],
): Promise<ClaimAnswer | Fenced> {
  if (!fence) return redis.nrsClaimIfOwned(stream, group, consumer, idleMs, retryCount, ...ids);
  const fenced = fenceArgs(fence);
  if (fenced === null) return [ids, []];
  const reply = await redis.nrsClaimIfOwnedFenced(stream, ...fenced, group, consumer, idleMs, retryCount, ...ids);
  return reply ?? FENCED;
}

/** What an ack answers: the claim epoch Redis holds now ('' while the fast path is off), the count acked, the ids not acked. */
export interface AckAnswer {
  readonly epoch: string;
  readonly acked: number;
  readonly notAcked: string[];
}

/**
 * nrsAckUnderEpoch, fenced when the target has a fence: the plain XACK when every id was read
 * under the claim epoch Redis still holds (`readUnder`, '' when unknown), else the owner check.
 */
export async function ackUnderEpoch(
  redis: ScriptedRedis,
  { stream, group, consumer, fence, claimEpochKey }: WriteTarget & { readonly claimEpochKey: string },
  smallest: string,
  largest: string,
  readUnder: string,
  ids: string[],
): Promise<AckAnswer | Fenced> {
  let reply: AckUnderEpochReply | null;
  if (!fence) {
    reply = await redis.nrsAckUnderEpoch(stream, claimEpochKey, group, consumer, smallest, largest, readUnder, ...ids);
  } else {
    const fenced = fenceArgs(fence);
    if (fenced === null) return { epoch: '', acked: 0, notAcked: [...new Set(ids)] };
    reply = await redis.nrsAckUnderEpochFenced(
      stream,
      claimEpochKey,
      ...fenced,
      group,
      consumer,
      smallest,
      largest,
      readUnder,
      ...ids,
    );
  }
  if (reply === null) return FENCED;
  const [epoch, acked, ...notAcked] = reply;
  return { epoch, acked: Number(acked), notAcked };
}
