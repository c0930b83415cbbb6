import type { PartitionFence } from '../ownership/partition-fence.js';

/** An entry held by a consumer, as lease renewal sees it. */
export interface LeasedEntry {
  readonly id: string;
  readonly deliveries: number;
  /** When its handler started (ms since epoch); 0 while it waits for a slot. */
  readonly startedAt: number;
  /** Its handler ran past maxHandlerMs: the lease is not renewed any more. */
  leaseExpired: boolean;
  /** Fires the handler's abort signal. */
  abort(reason: string): void;
}

/**
 * What recovery (reclaim, lease renewal, trim audit) needs of one consumer of one stream and
 * group. The consumer implements it; recovery never sees the consumer itself.
 */
export interface RecoveryTarget {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  readonly options: { readonly minIdleTimeMs: number; readonly maxHandlerMs: number; readonly deadLetterStream: string };
  /** Exclusive ownership: the hold on this partition; every recovery write is fenced by it. */
  readonly fence?: PartitionFence;
  /** Entries held now: running, waiting for a slot, or (while stopping) waiting to be handed back. */
  heldEntries(): Iterable<LeasedEntry>;
  readonly heldCount: number;
  /** How many more entries a reclaim round may hand over. */
  readonly reclaimRoom: number;
  /**
   * Exclusive ownership: changes whenever what was read may no longer be started (a new
   * generation, a hand-over, a loss). A claim issued under an older epoch is not accepted.
   */
  readonly epoch: number;
  /**
   * Takes entries claimed with XAUTOCLAIM ... JUSTID (delivery count not raised) by a call issued
   * under `epoch`; resolves with how many it accepted (those still pending and new here). Entries
   * it still holds are handed back, never kept: see ConsumerEngine.acceptClaimed.
   */
  acceptClaimed(ids: string[], epoch: number): Promise<number>;
  /** Writes tombstones for pending entries whose payload was trimmed away. */
  tombstone(ids: string[]): Promise<void>;
  /** The entry is owned by another consumer now. */
  markLost(id: string): void;
  /** The entry's payload was trimmed while held (Redis dropped it from the PEL). */
  markTrimmed(id: string): void;
}
