import type { EntryControl } from '../context/entry-control.interface.js';

interface EntryOwner {
  manualAck(entry: HeldEntry): Promise<boolean>;
}

/** The running batch an entry belongs to: told when each of its entries has settled. */
export interface BatchMembership {
  entrySettled(): void;
}

/** HeldEntry's yes/no states: bits of one number instead of eight fields on an object made per entry. */
const FLAG_BITS = {
  lost: 1,
  acked: 2,
  trimmed: 4,
  invoked: 8,
  settled: 16,
  leaseExpired: 32,
  countOnStart: 64,
  parking: 128,
} as const;

/**
 * An entry this consumer has read and not yet settled. One is made for every entry read, so its
 * yes/no states share one number (the accessors below keep them readable as fields): eight
 * boolean fields were a third of its size.
 */
export class HeldEntry implements EntryControl {
  /** @internal The bits of FLAG_BITS that are set. */
  flags = 0;
  /** When its handler started (ms since epoch); 0 while it waits for a slot. */
  startedAt = 0;
  /**
   * Exclusive ownership: the consumer's ownership epoch it was read under (see
   * OwnershipGate.mayStart). Its handler starts only while that epoch is still the current one.
   */
  epoch = 0;
  /**
   * The claim epoch its read was stamped with ('' unknown: its ack checks the owner). While Redis
   * still holds it, nobody can have claimed the entry, and the ack is a plain XACK (see
   * redis/lua/claim-epoch.ts). Only reads of new entries are stamped.
   */
  readUnder = '';
  /** Batch handlers: when it joined the queue of the next batch (performance.now()). */
  queuedAt = 0;
  /** Batch handlers: the running batch it is part of (null until its batch starts). */
  batch: BatchMembership | null = null;
  /** Links of the consumer's held list (see HeldEntries): its list, and the neighbours in it. */
  heldBy: object | null = null;
  heldPrev: HeldEntry | null = null;
  heldNext: HeldEntry | null = null;
  /** The manual ack in flight, shared by every `ctx.ack()` call of this entry. */
  ackInFlight: Promise<boolean> | null = null;
  private controller: AbortController | null = null;

  constructor(
    readonly id: string,
    /** Null when the entry was still pending but its payload had been trimmed away. */
    readonly fields: string[] | null,
    /** Deliveries so far, this one included (raised once more when a replayed entry starts). */
    public deliveries: number,
    private readonly owner: EntryOwner,
  ) {}

  // Yes/no states, each a bit of `flags` (accessors defined below the class).
  /** Another consumer took the entry over: never ack or park it from here. */
  declare lost: boolean;
  /** The handler acked it itself (manual mode). */
  declare acked: boolean;
  /** Trimming removed its payload while it was held, and Redis dropped it from the PEL. */
  declare trimmed: boolean;
  /**
   * Its handler was called. An entry may hold a slot before that (queued behind its ordering key,
   * or counting its delivery): the ownership gate decides at the call itself.
   */
  declare invoked: boolean;
  /** Its slot was freed (handled, failed or parked): never free it twice. */
  declare settled: boolean;
  /** Its handler ran past maxHandlerMs: the lease is no longer renewed. */
  declare leaseExpired: boolean;
  /**
   * Read back from this consumer's own PEL without counting a delivery (start-up or reconnect
   * replay): the delivery is counted in Redis right before its handler starts, so entries that
   * were only read ahead, or still running here, never spend their budget on a replay.
   */
  declare countOnStart: boolean;
  /**
   * This consumer's own dead-letter write (XADD + XACK) is in flight or done: the entry leaves
   * the PEL by our hand, so a lease renewal that finds it gone must not report it lost.
   */
  declare parking: boolean;

  /** Created on first use: most handlers never look at it, and entries are many. */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    return this.controller.signal;
  }

  markLost(): void {
    this.lost = true;
    this.abort(`Entry ${this.id} was reclaimed by another consumer.`);
  }

  /** Fires the handler's abort signal (once; later reasons are ignored). */
  abort(reason: string): void {
    if (this.controller?.signal.aborted) return;
    this.controller ??= new AbortController();
    this.controller.abort(new Error(reason));
  }

  ack(): Promise<boolean> {
    return this.owner.manualAck(this);
  }
}

for (const [name, bit] of Object.entries(FLAG_BITS)) {
  Object.defineProperty(HeldEntry.prototype, name, {
    get(this: HeldEntry): boolean {
      return (this.flags & bit) !== 0;
    },
    set(this: HeldEntry, on: boolean) {
      this.flags = on ? this.flags | bit : this.flags & ~bit;
    },
  });
}
