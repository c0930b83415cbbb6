import type { HeldEntry } from './held-entry.js';

/** An entry that took a handler slot; `go` is null while its delivery is being counted. */
interface Turn {
  readonly entry: HeldEntry;
  go: boolean | null;
}

/**
 * Hands entries to the dispatcher in the order they took their handler slots. A replayed or
 * taken-over entry first counts its delivery in Redis (a round trip); a new one does not. Without
 * this, a later entry of the same ordering key that took a slot in the same turn reached its key's
 * queue first and started first (issue 39, nemesis seed 1002: a new owner's replayed entry and an
 * entry it read as new, both waiting for a slot when two slots freed at once). So an entry waits
 * for the counts of the entries that took a slot before it; while no count is in flight, nothing
 * waits.
 */
export class StartsInOrder {
  /** Entries that took a slot and wait for a count before them (or their own); oldest first. */
  private readonly turns: Turn[] = [];

  constructor(private readonly dispatch: (entry: HeldEntry) => void) {}

  /** An entry that needs no count: dispatched now, or once the counts before it are done. */
  next(entry: HeldEntry): void {
    if (this.turns.length === 0) return this.dispatch(entry);
    this.turns.push({ entry, go: true });
  }

  /**
   * An entry about to count its delivery keeps its place; call the function returned once the
   * count is done, with whether it still starts (false: it settled without starting).
   */
  reserve(entry: HeldEntry): (go: boolean) => void {
    const turn: Turn = { entry, go: null };
    this.turns.push(turn);
    return (go) => {
      turn.go = go;
      this.flush();
    };
  }

  /**
   * Dispatches every entry at the head whose count is done. An entry that settles inside its
   * dispatch may start the next one waiting, which is queued behind the rest (or, when none is
   * left, dispatched at once): the order holds.
   */
  private flush(): void {
    while (this.turns.length > 0 && this.turns[0].go !== null) {
      const { entry, go } = this.turns.shift()!;
      if (go) this.dispatch(entry);
    }
  }
}
