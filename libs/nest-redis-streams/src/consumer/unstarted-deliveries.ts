/** How many refused entries are remembered at most; the oldest are forgotten first. */
const MAX_REMEMBERED = 10_000;

/** An entry left pending with `counted` deliveries in Redis, of which only `before` happened. */
interface LeftCount {
  counted: number;
  before: number;
}

/**
 * Exclusive ownership: the delivery counts to give back to entries the ownership gate refused
 * after their delivery was counted (by their read, or as they started) and before their handler
 * was called. A hand-back would write the count before it (see countOnHandBack), but the gate
 * refuses because the lease ran out or moved on, and then the fence refuses writes too: the
 * entry stays pending with the count, and is replayed (or taken over) once the partition is held
 * again. So the count before is remembered here, by entry id, and the entry is held again with it
 * when Redis still has exactly the count it was left with (nobody has delivered it since): its
 * start then counts the one delivery it really gets. Taken over by another instance, an entry
 * keeps the count (see docs/handlers.md, "Delivery counts").
 */
export class UnstartedDeliveries {
  private readonly left = new Map<string, LeftCount>();

  /** The entry stays pending with `counted` deliveries in Redis; `before` of them happened. */
  remember(id: string, counted: number, before: number): void {
    // Nothing to give back: an entry held to be counted on start keeps what it was held with
    // (given back already, when it was held after a refusal).
    if (before >= counted) return;
    this.left.delete(id);
    this.left.set(id, { counted, before });
    if (this.left.size > MAX_REMEMBERED) this.left.delete(this.left.keys().next().value!);
  }

  /** The count to hold a replayed or reclaimed entry with, found pending with `counted` deliveries. */
  heldCount(id: string, counted: number): number {
    const left = this.left.get(id);
    if (left === undefined) return counted;
    if (left.counted === counted) return left.before;
    // Delivered (or set back) since: the count in Redis is the one to go on with.
    this.left.delete(id);
    return counted;
  }

  /** The entry started here (its count set) or left the PEL: nothing to give back any more. */
  forget(id: string): void {
    this.left.delete(id);
  }
}
