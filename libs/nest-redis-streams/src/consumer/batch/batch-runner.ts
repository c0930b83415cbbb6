import { countsInRedisOnStart, deliveryOnStart } from '../delivery-policy.js';
import type { EntryWrites } from '../entry-writes.js';
import { FENCED } from '../../ownership/fenced-writes.js';
import type { BatchMembership, HeldEntry } from '../held-entry.js';
import type { SlotOwner } from '../slot-owner.interface.js';
import type { ResolvedBatchOptions } from './resolve-batch.js';

/** What a BatchRunner needs from the consumer that holds the entries. */
export interface BatchHost extends SlotOwner {
  /** Handlers may start: not stopping, and (exclusive ownership) the partition is held. */
  mayStartBatch(): boolean;
  /** Takes handler slots for the entries of a starting batch (they count as running). */
  occupy(entries: readonly HeldEntry[]): void;
  /** Drops an entry taken over by another consumer while it waited: it will not run here. */
  forget(entry: HeldEntry): void;
}

/** Hands a started batch (every entry counted and still this consumer's) to its handler. */
export type BatchStart = (entries: HeldEntry[]) => void;

/** Counts the settled entries of one running batch; its slot is free once all have settled. */
class RunningBatch implements BatchMembership {
  constructor(
    private remaining: number,
    private readonly done: () => void,
  ) {}

  entrySettled(): void {
    if (--this.remaining === 0) this.done();
  }
}

/**
 * Forms batches out of the entries a consumer reads and decides when each one starts: at once
 * when `maxSize` entries wait, else when the oldest waiting entry has waited `maxWaitMs`, always
 * only while fewer than `concurrency` batches run. Entries of one read arrive in one synchronous
 * loop, so the decision is taken on the next microtask, once they are all queued. Replayed and
 * reclaimed entries count their delivery right before their batch starts, in one script call per
 * distinct delivery count, as single entries do one by one.
 */
export class BatchRunner {
  private queue: HeldEntry[] = [];
  private running = 0;
  private timer: NodeJS.Timeout | null = null;
  private scheduled = false;
  private arrivedAt = 0;
  private starting = false;

  constructor(
    private readonly host: BatchHost,
    /** The consumer's writes: a replayed or reclaimed entry's delivery is counted through them. */
    private readonly writes: Pick<EntryWrites, 'countDelivery'>,
    private readonly options: ResolvedBatchOptions & { concurrency: number; maxDeliveries: number },
    private readonly startBatch: BatchStart,
  ) {}

  /** Entries waiting for a batch. */
  get waiting(): number {
    return this.queue.length;
  }

  /** How many more entries the batches that may start now would take (see ConsumerSlots.claimRoom). */
  get freePlaces(): number {
    return (this.options.concurrency - this.running) * this.options.maxSize - this.queue.length;
  }

  /** Queues an entry for the next batch. */
  push(entry: HeldEntry): void {
    // Entries of one read share their arrival time: one clock read per read, not per entry.
    if (!this.scheduled) this.arrivedAt = performance.now();
    entry.queuedAt = this.arrivedAt;
    this.queue.push(entry);
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.startReady();
    });
  }

  /** Starts every batch that may start now; arms the timer of a partial one. */
  startReady(): void {
    if (this.starting) return;
    this.starting = true;
    try {
      const { maxSize, maxWaitMs, concurrency } = this.options;
      while (this.running < concurrency && this.queue.length > 0 && this.host.mayStartBatch()) {
        this.dropLostHead();
        if (this.queue.length === 0) break;
        if (this.queue.length < maxSize) {
          const waited = performance.now() - this.queue[0].queuedAt;
          if (waited < maxWaitMs) {
            this.arm(maxWaitMs - waited);
            break;
          }
        }
        this.start(this.queue.splice(0, maxSize).filter((entry) => !this.dropIfLost(entry)));
      }
    } finally {
      this.starting = false;
    }
  }

  /** Forgets the waiting entries (stop, hand-over, partition lost); the consumer hands them back. */
  clear(): void {
    this.queue = [];
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private arm(ms: number): void {
    if (this.timer) return;
    // A timer armed for an older head fires early at worst, and re-arms for the new head.
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.startReady();
      },
      Math.max(1, Math.ceil(ms)),
    );
  }

  private dropLostHead(): void {
    while (this.queue.length > 0 && this.dropIfLost(this.queue[0])) this.queue.shift();
  }

  private dropIfLost(entry: HeldEntry): boolean {
    if (!entry.lost) return false;
    this.host.forget(entry);
    return true;
  }

  private start(entries: HeldEntry[]): void {
    if (entries.length === 0) return;
    this.running++;
    const membership = new RunningBatch(entries.length, () => this.batchDone());
    for (const entry of entries) entry.batch = membership;
    this.host.occupy(entries);
    if (!entries.some((entry) => entry.countOnStart)) return this.hand(entries);
    this.countDeliveries(entries).then(
      () => this.hand(entries.filter((entry) => !entry.settled)),
      (err: unknown) => {
        for (const entry of entries) this.host.settledUnexpectedly(entry, err);
      },
    );
  }

  private hand(entries: HeldEntry[]): void {
    try {
      this.startBatch(entries);
    } catch (err) {
      // Only a broken listener or logger gets here; the entries stay pending and are redelivered.
      for (const entry of entries) this.host.settledUnexpectedly(entry, err);
    }
  }

  private batchDone(): void {
    this.running--;
    this.startReady();
  }

  /**
   * Replayed or reclaimed entries: their delivery is counted in Redis before the handler starts
   * (see ConsumerSlots.countDelivery). Entries found acked, parked or taken over
   * meanwhile settle as lost and stay out of the batch; refused by the fence, as unstarted.
   */
  private async countDeliveries(entries: HeldEntry[]): Promise<void> {
    const byCount = new Map<number, HeldEntry[]>();
    for (const entry of entries) {
      if (!entry.countOnStart) continue;
      // Both at once: a hand-back while the count is in flight restores the count before it.
      entry.countOnStart = false;
      const next = (entry.deliveries = deliveryOnStart(entry.deliveries));
      // Parked before the handler without a claim, as a single entry would be.
      if (!countsInRedisOnStart(entry.fields, next, this.options)) continue;
      const same = byCount.get(next);
      if (same) same.push(entry);
      else byCount.set(next, [entry]);
    }
    await Promise.all(
      [...byCount].map(async ([next, members]) => {
        const ids = members.map((entry) => entry.id);
        const claimed = await this.writes.countDelivery(ids, next);
        if (claimed === FENCED) {
          // The lease had run out by Redis' clock: they stay pending for the partition's owner.
          for (const entry of members) this.host.settled(entry, 'unstarted');
          return;
        }
        const [lost, trimmed] = claimed;
        const lostIds = new Set(lost);
        const trimmedIds = new Set(trimmed);
        for (const entry of members) {
          if (lostIds.has(entry.id)) {
            entry.markLost();
            this.host.settled(entry, 'lost');
            continue;
          }
          if (trimmedIds.has(entry.id)) entry.trimmed = true;
        }
      }),
    );
  }
}
