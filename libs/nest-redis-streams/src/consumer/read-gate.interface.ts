import type { PartitionFence } from '../ownership/partition-fence.js';
import type { StreamEntryReply } from '../redis/replies.js';

/** What the read loop asks before it reads and checks every reply against (see OwnershipGate). */
export interface ReadGate {
  /** Exclusive ownership: the hold on the partition (undefined: shared). */
  readonly fence: PartitionFence | undefined;
  /** The epoch a read is issued under; its reply is taken in only while it is still current. */
  readonly epoch: number;
  /** A new generation was granted: the partition's whole PEL is to be taken over first. */
  readonly takeoverDue: boolean;
  mayRead(): boolean;
  isCurrent(epoch: number): boolean;
  /** The takeover issued under `epoch` is done (false: a newer one is due). */
  tookOver(epoch: number): boolean;
}

/** Where the read loop puts what it read, and what it asks of what is held. */
export interface EntrySink {
  /** How many more new entries may be read. */
  readonly room: number;
  /**
   * How many entries taken over from other consumers could start at once (free handler slots
   * nothing waits for, within room): a CLAIM read counts a delivery of each one it takes.
   */
  readonly claimRoom: number;
  /**
   * The claim epoch to stamp a read with, taken right before it is sent: Redis held it before the
   * read ran, so no claim of what the read returns can have left it unchanged.
   */
  readonly claimEpoch: string;
  /**
   * Takes an entry in; the caller made sure its read was issued under the current epoch.
   * `countOnStart`: its delivery is counted when it starts (replayed or reclaimed), not by the read.
   * `readUnder`: the claim epoch the read was stamped with ('' when not stamped).
   */
  take(id: string, fields: string[] | null, deliveries: number, countOnStart: boolean, readUnder?: string): void;
  /**
   * Exclusive ownership: new entries a read counted a delivery of and that were not taken in (its
   * reply came under an older epoch). They stay pending with that count, which their replay here
   * gives back (see UnstartedDeliveries). Answered during a cooperative hand-over, they are
   * handed back with the rest (see droppedInHandOver), their count given back while the partition
   * is still held: the next owner takes them over as never delivered.
   */
  dropped(rows: readonly StreamEntryReply[]): void;
  /** Ids held now (running, waiting), for filtering many at once. */
  heldIds(): Set<string>;
  /** Whether an entry with this id is held. */
  holds(id: string): boolean;
  /** Ids finished here whose ack is not answered yet: pending in Redis, but done. */
  unsentAcks(): Set<string>;
  /** A held entry's handler ran past maxHandlerMs (its lease is not renewed any more). */
  holdsExpiredLease(): boolean;
}
