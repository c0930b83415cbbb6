/** Who acknowledges an entry: the transport after the handler succeeds, or the handler itself. */
export type AckMode = 'auto' | 'manual';

/**
 * A batch handler's batches (`@EventPattern(stream, { batch: { maxSize: 500, maxWaitMs: 20 } })`):
 * `@Payload()` is then an array of payloads in stream order and `@Ctx()` a
 * `RedisStreamsBatchContext` with one context per entry.
 */
export interface BatchOptions {
  /** Most entries handed to one call of the handler. */
  maxSize: number;
  /**
   * Longest time a partial batch waits for more entries once a batch could start: a full batch
   * starts at once, a partial one at the latest this long after its oldest entry was read. 0
   * starts with whatever has been read.
   * @default 0
   */
  maxWaitMs?: number;
}

/**
 * Per-handler settings, given as the extras of `@EventPattern(stream, extras)` or
 * `@MessagePattern(stream, extras)`. Every field falls back to the server options.
 */
export interface StreamHandlerOptions {
  /**
   * Consumer group that this handler reads the stream in. Two handlers on one stream with
   * different groups each receive every entry.
   * @default the server's `group`
   */
  group?: string;
  /**
   * Handlers of this group running at once in this process.
   * @default 1 (entries handled one after another, in stream order)
   */
  concurrency?: number;
  /**
   * Entries this consumer holds at once (running plus read ahead). Bounds memory: a backlog of
   * millions is never pulled in. Reading ahead saves round trips (one XREADGROUP per batch) while
   * handlers still run `concurrency` at a time and in order. The price: when the process crashes,
   * Redis has counted a delivery for read-ahead entries that never ran (it counts reads, not
   * handler runs), so an entry that kills the process can push its read-ahead neighbours towards
   * `maxDeliveries`. Entries replayed or reclaimed are counted only when their handler starts.
   * Set it to `concurrency` for no read-ahead. Raised to `concurrency` when smaller.
   *
   * Left unset (here and on the server), the read-ahead follows the handler's pace: 64 (or
   * `concurrency`), up to 256 while that many entries are at most ~50 ms of its work; a value you
   * set is kept as it is. docs/handlers.md, "Read-ahead".
   * @default 64 (or `concurrency`, when larger), up to 256 for a fast handler
   */
  prefetchCount?: number;
  /**
   * Where a newly created group starts: `'0'` catches up on everything the stream still holds,
   * `'$'` only sees entries added after the group was created.
   * @default '0'
   */
  startId?: string;
  /** @default 'auto' */
  ackMode?: AckMode;
  /**
   * Deliveries after which a failing entry is moved to the dead-letter stream.
   * @default 5
   */
  maxDeliveries?: number;
  /**
   * An entry pending this long without a lease renewal is taken over by another consumer.
   * Choose several times the handler's p99 time; with lease renewal on it can be short.
   * @default 30000
   */
  minIdleTimeMs?: number;
  /**
   * Dead-letter stream for this handler's entries.
   * @default `<stream>:dlq`
   */
  deadLetterStream?: string;
  /**
   * Number of partition streams the pattern is spread over (`orders:{orders:0}` … `orders:{orders:N-1}`, one
   * hash tag each, so a Redis Cluster places them on different shards). The handler consumes all
   * of them in its group; the client picks a partition per entry. 1 = a single stream `orders`.
   * @default 1
   */
  partitions?: number;
  /**
   * Keeps entries with the same key in order with `concurrency` > 1: an entry waits until the
   * previous entry of its key has finished. A field name of the payload (`'customerId'`) or a
   * function of it. First deliveries keep their order; a retried entry runs after later ones.
   * @default undefined (no per-key ordering)
   */
  orderingKey?: string | ((data: unknown) => string | undefined);
  /**
   * What a parked entry (moved to the dead-letter stream) means for the later entries of its
   * `orderingKey`. `'continue'`: they run as usual. `'block-key'`: its key is blocked from its
   * first failure on; its later entries are held (moved out of the group's pending list into a
   * held stream of the key) until the parked entry is re-driven and succeeds, or is discarded
   * (`StreamOperations.discard`, `releaseBlockedKey`); then they run one at a time, in order.
   * Needs `orderingKey`, `ackMode: 'auto'` and `@EventPattern`; see docs/handlers.md, "Order
   * that survives the dead-letter stream".
   * @default 'continue'
   */
  onDeadLetter?: 'continue' | 'block-key';
  /**
   * The life of a running handler's lease. Past it the entry's lease is no longer renewed, the
   * handler's abort signal (`ctx.getSignal()`) fires, liveness reports the handler as hung, and
   * the entry becomes reclaimable by any consumer once idle past `minIdleTimeMs`. It bounds how
   * long a hung handler can hide behind lease renewal.
   * @default 300000 (5 minutes, like Kafka's max.poll.interval.ms)
   */
  maxHandlerMs?: number;
  /**
   * `'exclusive'`: each partition (see `partitions`) is read by one instance of the group at a
   * time. The instances divide the partitions among themselves through Redis (heartbeats with a
   * lease, a generation per partition that fences every write of a previous owner) and move them
   * cooperatively as instances come and go. With `partitions: 1` one instance consumes the stream
   * and the others stand by. `'shared'`: every instance reads every partition.
   * @default 'shared'
   */
  ownership?: 'shared' | 'exclusive';
  /**
   * Exclusive ownership: life of an instance's membership and of its hold on a partition without
   * a renewal (renewed every third of it). A killed instance's partitions move after at most about
   * `ownershipLeaseMs × 4/3`.
   * @default 10000
   */
  ownershipLeaseMs?: number;
  /**
   * Hands the handler up to `maxSize` entries per call (`@EventPattern` only). Each entry keeps
   * its own outcome: resolved → all acked in one call; thrown → each retried with its own
   * delivery count; `batch.fail(index, error)` → only those retried (or parked). `concurrency`
   * then counts batches, and `prefetchCount` defaults to `maxSize × (concurrency + 1)`, so that
   * the next batch is read while one runs.
   * @default undefined (one entry per call)
   */
  batch?: BatchOptions;
}
