import type { EntryRef } from '../events/transport-events.js';
import type { HeldEntry } from './held-entry.js';

/**
 * How an entry's turn ended:
 * - `acked`: the handler succeeded (the ack is queued) or acknowledged it itself;
 * - `retry-scheduled`: it failed and waits for a retry after its back-off;
 * - `parked`: it went to the dead-letter stream (a tombstone for a lost payload included);
 * - `skipped`: it was acknowledged without running (see SkipReason);
 * - `lost`: another consumer owns it now, so nothing was written for it from here;
 * - `left-pending`: a write failed; it stays pending and is delivered again;
 * - `unstarted`: the ownership gate refused its handler (exclusive ownership: the partition is not
 *   held under the epoch it was read under); it stays pending for the partition's owner.
 */
export type SettleOutcome = 'acked' | 'retry-scheduled' | 'parked' | 'skipped' | 'lost' | 'left-pending' | 'unstarted';

/** What the dispatcher reports to the consumer that holds the entry's slot. */
export interface SlotOwner {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  ref(entry: HeldEntry): EntryRef;
  /**
   * The ownership gate, asked right before a handler is called with the entry (queued behind its
   * ordering key or not, replayed, reclaimed, in a batch). False: settle it as `unstarted`.
   */
  mayStart(entry: HeldEntry): boolean;
  /** The entry's turn ended with this outcome: free its slot. */
  settled(entry: HeldEntry, outcome: SettleOutcome): void;
  /** Something unexpected broke while settling: log it and free the slot. */
  settledUnexpectedly(entry: HeldEntry, err: unknown): void;
}
