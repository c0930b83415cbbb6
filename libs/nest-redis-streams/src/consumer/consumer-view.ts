import type { ResolvedHandlerOptions, StreamSubscription } from './stream-subscription.js';

/** One entry a consumer holds, as health, metrics and users read it. */
export interface HeldEntryView {
  readonly id: string;
  /** Deliveries so far, this one included. */
  readonly deliveries: number;
  /** When its handler started (ms since epoch); 0 while it waits for a slot. */
  readonly startedAt: number;
  /** Its handler ran past maxHandlerMs: the lease is not renewed any more. */
  readonly leaseExpired: boolean;
  /** Another consumer took it over. */
  readonly lost: boolean;
  /** The handler acked it itself (manual mode). */
  readonly acked: boolean;
  /** Trimming removed its payload while it was held. */
  readonly trimmed: boolean;
}

/** The entries a consumer holds (running, waiting for a slot, or being acked), read-only. */
export interface HeldView {
  readonly size: number;
  has(id: string): boolean;
  get(id: string): HeldEntryView | undefined;
  /** In the order they were read. */
  values(): IterableIterator<HeldEntryView>;
}

/** Exclusive ownership as one consumer sees it now. */
export interface OwnershipView {
  /** The handler asked for `ownership: 'exclusive'`. */
  readonly exclusive: boolean;
  /** This instance holds the partition by its local clock (always true when shared). */
  readonly held: boolean;
  /** The generation held (null when none, or shared). */
  readonly generation: string | null;
  /** The consumer's ownership epoch (see consumer/ownership-gate.ts). */
  readonly epoch: number;
}

/**
 * What health, metrics, the console and `RedisStreamsServer.getConsumers()` read of a consumer:
 * plain values and read-only views. Nothing outside the engine changes its state.
 */
export interface ConsumerView {
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;
  /** Partition index when the pattern is spread over several streams; 0 otherwise. */
  readonly partition: number;
  readonly subscription: Readonly<Pick<StreamSubscription, 'pattern' | 'stream' | 'partition' | 'kind'>> & {
    readonly options: Readonly<ResolvedHandlerOptions>;
  };
  readonly options: Readonly<ResolvedHandlerOptions>;
  /** Entries read and not yet settled: running, waiting for a slot, or being acked. */
  readonly held: HeldView;
  readonly heldCount: number;
  /** How many more new entries the read loop may take (≤ 0: waiting for a slot). */
  readonly room: number;
  /**
   * How many entries it may hold at once now: prefetchCount, or where the automatic read-ahead
   * (prefetchCount unset) has put it, 64 to 256 by the handler's pace.
   */
  readonly readAhead: number;
  /** Time of the last successful read (or empty read) of the loop: a liveness signal. */
  readonly lastReadAt: number;
  /** Since when the loop has been waiting for a free slot (0 while it reads). */
  readonly waitingForRoomSince: number;
  /** The handler that has been running longest, for liveness checks. */
  longestRunning(now?: number): { id: string; runningMs: number } | null;
  readonly ownership: OwnershipView;
}
