import { type ParkWrite, parkEntry } from '../dead-letter/park-entry.js';
import { claimEpochKey, retryWaitChecksKey, retryWaitsKey } from '../keys/index.js';
import { RETRY_WAITS } from '../recovery/retry-waits.js';
import {
  type AckAnswer,
  type ClaimAnswer,
  type Fenced,
  type WriteTarget,
  ackUnderEpoch,
  FENCED,
  claimIfOwned,
  fenceArgs,
} from '../ownership/fenced-writes.js';
import type { PartitionFence } from '../ownership/partition-fence.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { WatchedAck } from '../redis/watched-ack.js';

/** The consumer whose entries an EntryWrites writes: plain values, and its fence. */
export interface EntryWriteScope extends WriteTarget {
  readonly deadLetterStream: string;
  readonly minIdleTimeMs: number;
  /** The plain XACK under WATCH (redis/watched-ack.ts); without it every ack is the script. */
  readonly watchedAck?: WatchedAck;
}

/**
 * The only way a consumer writes its entries: ack, claim (renew, count a delivery, retry, hand
 * back) and park. Built once per consumer, it holds the stream, group, consumer name and fence
 * and takes only what varies. Every write checks, inside its script, that this consumer still
 * owns the entry (and, under exclusive ownership, that Redis accepts the partition's generation:
 * FENCED otherwise, see ownership/fenced-writes.ts). The ack checks it the cheap way when it can:
 * unchanged claim epoch since the read, nobody can own the entries but this consumer.
 */
export class EntryWrites implements WriteTarget {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  readonly fence?: PartitionFence;
  /** The group's claim epoch hash (see redis/lua/claim-epoch.ts). */
  readonly claimEpochKey: string;
  private readonly deadLetterStream: string;
  private readonly minIdleTimeMs: number;
  private readonly watchedAck?: WatchedAck;

  constructor(
    private readonly redis: ScriptedRedis,
    scope: EntryWriteScope,
  ) {
    this.stream = scope.stream;
    this.group = scope.group;
    this.consumer = scope.consumer;
    this.fence = scope.fence;
    this.claimEpochKey = claimEpochKey(scope.stream, scope.group);
    this.deadLetterStream = scope.deadLetterStream;
    this.minIdleTimeMs = scope.minIdleTimeMs;
    // Fenced acks check the partition's generation too, which only the script can.
    this.watchedAck = scope.fence ? undefined : scope.watchedAck;
  }

  /**
   * Acks the ids still owned: a plain XACK when all were read under the claim epoch Redis still
   * holds (`readUnder`; '' when unknown or mixed), under WATCH when it can be, else in the ack
   * script, which checks the owner one by one when the epoch moved.
   */
  async ack(smallest: string, largest: string, readUnder: string, ids: string[]): Promise<AckAnswer | Fenced> {
    if (readUnder !== '' && this.watchedAck) {
      const acked = await this.watchedAck.ack(this.stream, this.group, this.claimEpochKey, readUnder, ids);
      if (acked !== null) return { epoch: readUnder, acked, notAcked: [] };
    }
    return ackUnderEpoch(this.redis, this, smallest, largest, readUnder, ids);
  }

  /** Renews the lease of running entries: idle reset, delivery count unchanged. */
  renew(ids: string[]): Promise<ClaimAnswer | Fenced> {
    return claimIfOwned(this.redis, this, 0, -1, ids);
  }

  /** A replayed or reclaimed entry starts: its delivery count becomes `deliveries` (see delivery-policy.ts). */
  countDelivery(ids: string[], deliveries: number): Promise<ClaimAnswer | Fenced> {
    return claimIfOwned(this.redis, this, 0, deliveries, ids);
  }

  /**
   * A failed entry waits `backoffMs` for its retry: idle set to `idleMs` (backdated, so that any
   * reclaimer takes it when the back-off is over), count set to `retryCount` unless -1, and its
   * real times recorded for what operators read (recovery/retry-waits.ts).
   */
  async retry(id: string, idleMs: number, retryCount: number, backoffMs: number): Promise<ClaimAnswer | Fenced> {
    const { stream, group, consumer, fence } = this;
    const keys = [stream, retryWaitsKey(stream, group), retryWaitChecksKey(stream, group)] as const;
    const { ttlMs, checksPerWrite, toleranceMs } = RETRY_WAITS;
    const args = [idleMs, retryCount, backoffMs, ttlMs, checksPerWrite, toleranceMs, id];
    if (!fence) return this.redis.nrsRetryIfOwned(...keys, group, consumer, ...args);
    const fenced = fenceArgs(fence);
    // No generation held: the entry is not this instance's to write (as claimIfOwned answers).
    if (fenced === null) return [[id], []];
    const reply = await this.redis.nrsRetryIfOwnedFenced(...keys, ...fenced, group, consumer, ...args);
    return reply ?? FENCED;
  }

  /**
   * Hands entries back: idle set to min-idle, so any consumer's reclaimer takes them next round;
   * their delivery count set to `deliveries` unless -1 (see countOnHandBack).
   */
  handBack(ids: string[], deliveries = -1): Promise<ClaimAnswer | Fenced> {
    return claimIfOwned(this.redis, this, this.minIdleTimeMs, deliveries, ids);
  }

  /**
   * Parks one entry in this consumer's dead-letter stream (see dead-letter/park-entry.ts); with
   * `blockKey` (block-key handlers), its ordering key's block becomes `parked` in the same script
   * (null: the key is not known, the script finds the block this entry holds).
   */
  park(
    id: string,
    requireOwner: boolean,
    metadata: readonly string[],
    fallbackFields: readonly string[],
    blockKey?: string | null,
  ): Promise<string | null | Fenced> {
    const park: ParkWrite = {
      id,
      deadLetterStream: this.deadLetterStream,
      requireOwner: requireOwner ? '1' : '0',
      metadata,
      fallbackFields,
      blockKey,
    };
    return parkEntry(this.redis, this, park);
  }
}
