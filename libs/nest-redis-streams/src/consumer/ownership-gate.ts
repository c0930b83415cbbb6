import type { PartitionFence } from '../ownership/partition-fence.js';
import type { ReadGate } from './read-gate.interface.js';

/** Told when an ownership epoch ends: nothing read under it may start any more. */
export interface EpochListener {
  epochEnded(): void;
}

/** What the gate reads of an entry that is about to start. */
export interface GatedEntry {
  readonly settled: boolean;
  /** The epoch it was read under (see OwnershipGate.epoch). */
  readonly epoch: number;
}

/**
 * The ownership gate of one consumer: every handler start (queued behind an ordering key or not,
 * replayed, reclaimed, in a batch) passes it right before the call, and every read or claim reply
 * is checked against the epoch it was issued under. Shared consumption: always open. Exclusive
 * ownership: open only while the partition is held by the local clock, not being handed over,
 * and the entry was read under the current epoch, so a process paused past its lease starts
 * nothing its successor may be running.
 *
 * The epoch moves on with every new generation, hand-over and loss, and when an entry read under
 * it could not start (see refused): entries read, and replies of reads or claims issued, under an
 * older epoch are never started or taken in. A refused entry stays pending in Redis, and its
 * refusal ends the epoch: every entry held and not started is dropped with it, and the PEL is
 * replayed in stream order once the partition is held again (under a new generation its new
 * owner's takeover does the same), so a renewal never lets a later entry start before it.
 */
export class OwnershipGate implements ReadGate {
  /** The ownership epoch; see above. */
  epoch = 0;
  /** A new generation was granted: move the partition's whole PEL here before reading. */
  takeoverDue = false;
  /** Giving the partition up (or given up): nothing is read or started until acquired again. */
  private handingOver = false;
  private readonly listeners: EpochListener[] = [];

  constructor(
    /** Exclusive ownership: this instance's hold on the partition (undefined: shared, read always). */
    readonly fence: PartitionFence | undefined,
  ) {}

  /** Registers a collaborator that drops what was read under an ending epoch. */
  onEpochEnded(listener: EpochListener): void {
    this.listeners.push(listener);
  }

  get exclusive(): boolean {
    return this.fence !== undefined;
  }

  /**
   * Entries are read and handlers started only while the partition is held by the local clock
   * and not being handed over (always true when shared).
   */
  mayRead(): boolean {
    return !this.fence || (this.fence.held && !this.handingOver);
  }

  /** The gate itself; see the class comment. */
  mayStart(entry: GatedEntry): boolean {
    return !entry.settled && (!this.fence || (entry.epoch === this.epoch && this.mayRead()));
  }

  /** Whether a reply of a read or claim issued under `epoch` may be taken in. */
  isCurrent(epoch: number): boolean {
    return epoch === this.epoch;
  }

  /**
   * The gate refused an entry of the current epoch (settled `unstarted`): end it, so that nothing
   * read after the entry starts before it.
   */
  refused(entry: GatedEntry): void {
    if (this.fence && entry.epoch === this.epoch) this.newEpoch();
  }

  /**
   * Exclusive ownership: nothing read under the epoch now ending starts any more. The listeners
   * drop what waits and settle what holds a slot unstarted; all stay pending in Redis, for the
   * replay (or the new owner's takeover).
   */
  newEpoch(): void {
    this.epoch++;
    for (const listener of this.listeners) listener.epochEnded();
  }

  /** OwnedPartition: a new generation was granted. */
  acquired(): void {
    this.handingOver = false;
    this.newEpoch();
    this.takeoverDue = true;
  }

  /** A cooperative hand-over is under way: the partition is still held, and given up next. */
  get isHandingOver(): boolean {
    return this.handingOver;
  }

  /** OwnedPartition: a cooperative hand-over begins: nothing new is read or started. */
  beginHandOver(): void {
    this.handingOver = true;
  }

  /**
   * The takeover issued under `epoch` has moved the whole PEL here. False when a grant (or a
   * hand-over) came while it ran: the takeover of that one is still to do.
   */
  tookOver(epoch: number): boolean {
    if (epoch !== this.epoch) return false;
    this.takeoverDue = false;
    return true;
  }
}
