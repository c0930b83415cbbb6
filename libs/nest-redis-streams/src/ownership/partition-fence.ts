/**
 * This instance's hold on one partition: the generation (fencing token) Redis granted and how
 * long the lease lasts by the local clock. The local deadline is measured from *before* the
 * request that granted or renewed it was sent, so it ends no later than Redis' own: once it has
 * passed, this instance starts no handler and reads nothing of the partition until renewed.
 * Writes carry the generation and are checked by Redis itself (see redis/lua/fence-check.ts).
 */
export class PartitionFence {
  /** The generation held, or null while the partition is not this instance's. */
  generation: string | null = null;
  private validUntil = 0;
  private granted: (() => void) | null = null;

  constructor(
    /** The partition's owner hash (see ownership-keys.ts). */
    readonly ownerKey: string,
    /** This instance's member id (consumer name plus an id of this start). */
    readonly member: string,
  ) {}

  /** Owned, and the lease has not run out by the local (conservative) clock. */
  get held(): boolean {
    return this.generation !== null && performance.now() < this.validUntil;
  }

  /** The lease was granted or renewed by a request sent at `sentAt` (performance.now()). */
  grant(generation: string, sentAt: number, leaseMs: number): void {
    this.generation = generation;
    this.validUntil = sentAt + leaseMs;
    this.granted?.();
  }

  revoke(): void {
    this.generation = null;
    this.validUntil = 0;
  }

  /** Called on every grant or renewal (the consumer wakes its paused read loop). */
  onGranted(listener: () => void): void {
    this.granted = listener;
  }
}
