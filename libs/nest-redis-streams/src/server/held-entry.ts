/** What the handler's context needs to ack the entry and to learn that it was taken over. */
export interface EntryControl {
  readonly signal: AbortSignal;
  ack(): Promise<boolean>;
}

interface EntryOwner {
  manualAck(entry: HeldEntry): Promise<boolean>;
}

/** An entry this consumer has read and not yet settled. */
export class HeldEntry implements EntryControl {
  /** Another consumer took the entry over: never ack or park it from here. */
  lost = false;
  /** The handler acked it itself (manual mode). */
  acked = false;
  /** Trimming removed its payload while it was held, and Redis dropped it from the PEL. */
  trimmed = false;
  /** When its handler started (ms since epoch); 0 while it waits for a slot. */
  startedAt = 0;
  /** Its slot was freed (handled, failed or parked): never free it twice. */
  settled = false;
  private controller: AbortController | null = null;

  constructor(
    readonly id: string,
    /** Null when the entry was still pending but its payload had been trimmed away. */
    readonly fields: string[] | null,
    readonly deliveries: number,
    private readonly owner: EntryOwner,
  ) {}

  /** Created on first use: most handlers never look at it, and entries are many. */
  get signal(): AbortSignal {
    this.controller ??= new AbortController();
    return this.controller.signal;
  }

  markLost(): void {
    this.lost = true;
    this.controller?.abort(new Error(`Entry ${this.id} was reclaimed by another consumer.`));
  }

  ack(): Promise<boolean> {
    return this.owner.manualAck(this);
  }
}
