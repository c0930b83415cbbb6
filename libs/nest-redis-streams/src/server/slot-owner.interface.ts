import type { EntryRef } from '../events/transport-events.js';
import type { HeldEntry } from './held-entry.js';

/**
 * How an entry's turn ended:
 * - `acked`: the handler succeeded (the ack is queued) or acknowledged it itself;
 * - `retry-scheduled`: it failed and waits for a retry after its back-off;
 * - `parked`: it went to the dead-letter stream (a tombstone for a lost payload included);
 * - `skipped`: it was acknowledged without running (see SkipReason);
 * - `lost`: another consumer owns it now, so nothing was written for it from here;
 * - `left-pending`: a write failed; it stays pending and is delivered again.
 */
export type SettleOutcome = 'acked' | 'retry-scheduled' | 'parked' | 'skipped' | 'lost' | 'left-pending';

/** What the dispatcher reports to the consumer that holds the entry's slot. */
export interface SlotOwner {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  ref(entry: HeldEntry): EntryRef;
  /** The entry's turn ended with this outcome: free its slot. */
  settled(entry: HeldEntry, outcome: SettleOutcome): void;
  /** Something unexpected broke while settling: log it and free the slot. */
  settledUnexpectedly(entry: HeldEntry, err: unknown): void;
}
