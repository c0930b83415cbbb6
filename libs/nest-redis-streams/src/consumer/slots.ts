import type { EntryRef } from '../events/transport-events.js';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { FENCED } from '../ownership/fenced-writes.js';
import type { StreamSubscription } from './stream-subscription.js';
import { CONSUMER_MESSAGES } from './consumer.messages.js';
import type { AckBatcher } from './ack-batcher.js';
import { BatchDispatcher } from './batch/batch-dispatcher.js';
import { type BatchHost, BatchRunner } from './batch/batch-runner.js';
import { BATCH_MESSAGES } from './batch/batch.messages.js';
import { batchOptionsOf } from './batch/resolve-batch.js';
import type { ConsumerRuntime } from './consumer-runtime.interface.js';
import { countOnHandBack, countsInRedisOnStart, deliveryOnStart } from './delivery-policy.js';
import { EntryDispatcher, logSafely } from './entry-dispatcher.js';
import type { EntryWrites } from './entry-writes.js';
import type { FailureHandler } from './failure-handler.js';
import { FifoQueue } from './fifo-queue.js';
import { HeldEntry } from './held-entry.js';
import { HeldEntries } from './held-entries.js';
import { ReadAhead } from './read-ahead.js';
import { StartsInOrder } from './starts-in-order.js';
import type { EpochListener, OwnershipGate } from './ownership-gate.js';
import type { EntrySink } from './read-gate.interface.js';
import type { StreamEntryReply } from '../redis/replies.js';
import type { SettleOutcome } from './slot-owner.interface.js';
import { UnstartedDeliveries } from './unstarted-deliveries.js';
import { waitForSignal } from './wait-for-signal.js';

/** What the slots write through and report to; built once by the consumer. */
export interface SlotsDeps {
  readonly gate: OwnershipGate;
  readonly writes: EntryWrites;
  readonly acks: AckBatcher;
  readonly parking: FailureHandler;
  /** A slot (or room to read) was freed, or the loop should look again: wake the read loop. */
  readonly wakeReader: () => void;
}

/**
 * The handler slots of one consumer: the entries it holds (running, waiting for a slot, or being
 * acked), at most `concurrency` running at once, the rest waiting in read order (entries of one
 * ordering key one after another, see EntryDispatcher), or formed into batches by the batch
 * runner. Every start passes the ownership gate; every settle frees the slot once and wakes the
 * read loop.
 */
export class ConsumerSlots implements EntrySink, BatchHost, EpochListener {
  /** Entries read and not yet settled: running, waiting for a slot, or being acked. */
  readonly held = new HeldEntries();
  private readonly waiting = new FifoQueue<HeldEntry>();
  private running = 0;
  private startingWaiting = false;
  private stopping = false;
  private idle: (() => void) | null = null;
  private readonly dispatcher: EntryDispatcher;
  /** Entries reach the dispatcher in the order they took a slot, counted on start or not. */
  private readonly starts = new StartsInOrder((entry) => this.dispatch(entry));
  /** Batch handlers: forms the batches and starts them (undefined: one entry per call). */
  private readonly batches?: BatchRunner;
  private readonly gate: OwnershipGate;
  private readonly writes: EntryWrites;
  private readonly acks: AckBatcher;
  /** Exclusive ownership: the counts to give back to entries the gate refused (see UnstartedDeliveries). */
  private readonly unstarted = new UnstartedDeliveries();
  /** Read during a hand-over and dropped: handed back by it (see takeDroppedInHandOver). */
  private readonly droppedInHandOver: HeldEntry[] = [];
  /** How many entries may be held at once: prefetchCount, or sized by the handler's pace. */
  private readonly readAhead: ReadAhead;
  readonly stream: string;
  readonly group: string;
  readonly consumer: string;

  constructor(
    private readonly subscription: StreamSubscription,
    private readonly rt: ConsumerRuntime,
    private readonly deps: SlotsDeps,
  ) {
    const { gate, writes, acks, parking } = deps;
    ({ stream: this.stream, group: this.group, consumer: this.consumer } = writes);
    this.gate = gate;
    this.writes = writes;
    this.acks = acks;
    this.dispatcher = new EntryDispatcher(this, subscription, rt, acks, parking);
    const { stream, options } = subscription;
    this.readAhead = new ReadAhead(options.prefetchCount, options.autoReadAhead === true);
    if (options.onDeadLetter === 'block-key' && subscription.kind === 'message') {
      throw new InvalidOptionsError(CONSUMER_MESSAGES.blockKeyRequestHandler(stream));
    }
    const batch = batchOptionsOf(options);
    if (batch) {
      if (subscription.kind === 'message') throw new InvalidOptionsError(BATCH_MESSAGES.requestHandler(stream));
      const batches = new BatchDispatcher(this, subscription, rt, acks, parking, this.dispatcher);
      const { concurrency, maxDeliveries } = options;
      this.batches = new BatchRunner(this, writes, { ...batch, concurrency, maxDeliveries }, (entries) =>
        batches.dispatch(entries),
      );
    }
  }

  /** How many more new entries the read loop may take. */
  get room(): number {
    return this.readAhead.limit - this.held.size;
  }

  /**
   * How many entries taken over by a CLAIM read could start at once: the handler slots (or batch
   * places) free with nothing waiting for them, within room. Redis counts a delivery of each
   * entry such a read takes, and an entry taken over is to be counted only when it starts.
   */
  get claimRoom(): number {
    if (this.stopping) return 0;
    const free = this.batches
      ? this.batches.freePlaces
      : this.subscription.options.concurrency - this.running - this.waiting.size;
    return Math.max(0, Math.min(this.room, free));
  }

  /** Entries it may hold at once now (see ReadAhead). */
  get readAheadLimit(): number {
    return this.readAhead.limit;
  }

  /**
   * How many entries the reclaimer may take. A saturated read loop refills every free slot at
   * once, so reclaimed entries get a reserve of their own (up to another read-ahead) instead of
   * waiting for the load to stop: they are the ones that are already late. While they wait for a
   * slot, the read loop reads nothing new (held exceeds the read-ahead), so memory stays bounded.
   */
  get reclaimRoom(): number {
    return 2 * this.readAhead.limit - this.held.size;
  }

  get runningCount(): number {
    return this.running;
  }

  heldIds(): Set<string> {
    return this.held.ids();
  }
  holds(id: string): boolean {
    return this.held.get(id) !== undefined;
  }
  unsentAcks(): Set<string> {
    return this.acks.unsent();
  }

  holdsExpiredLease(): boolean {
    for (const entry of this.held.values()) if (entry.leaseExpired) return true;
    return false;
  }

  /** The ids among `ids` of held entries whose handler ran past maxHandlerMs (lease expired). */
  hungAmong(ids: string[]): string[] {
    let hung: Set<string> | null = null;
    for (const entry of this.held.values()) if (entry.leaseExpired) (hung ??= new Set()).add(entry.id);
    return hung === null ? [] : ids.filter((id) => hung.has(id));
  }

  /** The handler that has been running longest, for liveness checks. */
  longestRunning(now = Date.now()): { id: string; runningMs: number } | null {
    let oldest: HeldEntry | null = null;
    for (const entry of this.held.values()) {
      if (entry.startedAt > 0 && (!oldest || entry.startedAt < oldest.startedAt)) oldest = entry;
    }
    return oldest ? { id: oldest.id, runningMs: now - oldest.startedAt } : null;
  }

  /** The claim epoch a read sent now is stamped with (see AckBatcher.claimEpoch). */
  get claimEpoch(): string {
    return this.rt.checkEveryAck ? '' : this.acks.claimEpoch;
  }

  take(id: string, fields: string[] | null, deliveries: number, countOnStart: boolean, readUnder = ''): void {
    // Refused by the gate here after its delivery was counted: held with the count before it.
    if (countOnStart && this.gate.exclusive) deliveries = this.unstarted.heldCount(id, deliveries);
    const entry = new HeldEntry(id, fields, deliveries, this);
    entry.countOnStart = countOnStart;
    entry.readUnder = readUnder;
    this.accept(entry);
  }

  /** Takes an entry in; the caller made sure its read was issued under the current epoch. */
  accept(entry: HeldEntry): void {
    entry.epoch = this.gate.epoch;
    this.held.add(entry);
    // While stopping, an entry is only held: stop() hands it back for another consumer.
    if (this.stopping) return;
    if (this.batches) return this.batches.push(entry);
    if (this.running < this.subscription.options.concurrency && this.gate.mayRead()) this.run(entry);
    else this.waiting.push(entry);
  }

  /**
   * First step of a shutdown: no entry starts any more. Entries claimed or replayed from now on
   * are only held, and the consumer hands them back instead of running them.
   */
  stop(): void {
    this.stopping = true;
  }

  /** Forgets what waits for a slot or a batch (a shutdown: the consumer hands it back). */
  clearWaiting(): void {
    this.waiting.clear();
    this.batches?.clear();
  }

  /** Resolves once no handler runs, or after `timeoutMs`; callers ask only while runningCount > 0. */
  untilIdle(timeoutMs: number): Promise<void> {
    return waitForSignal((resolve) => (this.idle = resolve), timeoutMs);
  }

  /** Takes a slot and starts the entry on its way (see EntryDispatcher). */
  private run(entry: HeldEntry): void {
    this.running++;
    entry.startedAt = Date.now();
    if (!entry.countOnStart) return this.starts.next(entry);
    const counted = this.starts.reserve(entry);
    this.countDelivery(entry).then(counted, (err: unknown) => {
      this.settledUnexpectedly(entry, err);
      counted(false);
    });
  }

  private dispatch(entry: HeldEntry): void {
    try {
      this.dispatcher.dispatch(entry);
    } catch (err) {
      // Only a throwing event listener gets here; the entry stays pending and is redelivered.
      this.settledUnexpectedly(entry, err);
    }
  }

  /**
   * A replayed entry's delivery is counted in Redis before its handler starts, so an entry that
   * ends the process on every run still reaches maxDeliveries and is parked (and one that was
   * only read ahead is counted once, when it really runs). Resolves whether it may start now
   * (false: settled without starting).
   */
  private async countDelivery(entry: HeldEntry): Promise<boolean> {
    // Both at once: a hand-back while the count is in flight restores the count before it.
    entry.countOnStart = false;
    const next = (entry.deliveries = deliveryOnStart(entry.deliveries));
    if (countsInRedisOnStart(entry.fields, next, this.subscription.options)) {
      const claimed = await this.writes.countDelivery([entry.id], next);
      // The lease had run out by Redis' clock: not started, pending for the partition's owner.
      if (claimed === FENCED) {
        this.settled(entry, 'unstarted');
        return false;
      }
      const [lost, trimmed] = claimed;
      if (lost.length > 0) {
        // Acked, parked or taken over since the replay read it: not this consumer's to run.
        entry.markLost();
        this.settled(entry, 'lost');
        return false;
      }
      if (trimmed.length > 0) entry.trimmed = true;
    }
    return true;
  }

  settledUnexpectedly(entry: HeldEntry, err: unknown): void {
    logSafely(this.rt, CONSUMER_MESSAGES.settleFailed(entry.id, this.stream, (err as Error)?.stack ?? err));
    this.settled(entry, 'left-pending');
  }

  /** Frees the entry's slot; once per entry, whichever path gets here first. */
  settled(entry: HeldEntry, outcome: SettleOutcome): void {
    if (entry.settled) return;
    // The dead-letter or retry script found the entry owned by another consumer.
    if (outcome === 'lost' && !entry.lost) this.markLost(entry.id);
    entry.settled = true;
    this.running--;
    // Stopping: an entry that did not start stays held, so stop() hands it back with the rest
    // (its delivery count given back), not left pending here until a reclaim finds it idle.
    if (outcome !== 'unstarted' || !this.stopping) this.held.remove(entry);
    if (this.gate.exclusive) {
      if (outcome === 'unstarted') this.rememberUnstarted(entry);
      else this.unstarted.forget(entry.id);
    }
    this.readAhead.settled();
    entry.batch?.entrySettled();
    // The gate refused an entry of the current epoch: end it (see OwnershipGate.refused).
    if (outcome === 'unstarted') this.gate.refused(entry);
    this.startWaiting();
    this.deps.wakeReader();
    if (this.running === 0) this.idle?.();
  }

  /**
   * Fills free handler slots from the waiting queue. An entry whose handler finishes synchronously
   * settles inside `run`, which lands here again: the flag turns that into another turn of this
   * loop instead of a recursion as deep as the queue.
   */
  startWaiting(): void {
    if (this.batches) return this.batches.startReady();
    if (this.startingWaiting) return;
    this.startingWaiting = true;
    try {
      const { concurrency } = this.subscription.options;
      while (this.running < concurrency && this.waiting.size > 0 && !this.stopping && this.gate.mayRead()) {
        const next = this.waiting.shift()!;
        if (next.lost) this.held.remove(next);
        else this.run(next);
      }
    } finally {
      this.startingWaiting = false;
    }
  }

  /**
   * SlotOwner: the ownership gate every handler start passes, right before the call. Stopping,
   * nothing starts: an entry queued behind its ordering key when the stop began is handed back
   * (its predecessor may finish, or run past the shutdown timeout and finish after the hand-back).
   */
  mayStart(entry: HeldEntry): boolean {
    return !this.stopping && this.gate.mayStart(entry);
  }

  /**
   * EpochListener: nothing read under the epoch now ending starts any more. Entries waiting for a
   * slot or a batch are dropped, those that hold a slot but were not called settle as unstarted;
   * all stay pending in Redis, for the replay (or the new owner's takeover).
   */
  epochEnded(): void {
    this.waiting.clear();
    this.batches?.clear();
    for (const entry of this.held.values()) {
      if (entry.invoked) continue;
      if (entry.startedAt > 0) this.settled(entry, 'unstarted');
      else if (this.held.remove(entry)) this.rememberUnstarted(entry);
    }
  }

  /** EntrySink: entries a read counted a delivery of, dropped with the reply's older epoch. */
  dropped(rows: readonly StreamEntryReply[]): void {
    for (const [id, fields] of rows) {
      this.unstarted.remember(id, 1, 0);
      if (this.gate.isHandingOver) this.droppedInHandOver.push(new HeldEntry(id, fields, 1, this));
    }
  }

  /**
   * Entries a read answered during the hand-over brought and that were dropped: the hand-over
   * gives them back with the rest (see ConsumerEngine.handOver). Taken once.
   */
  takeDroppedInHandOver(): HeldEntry[] {
    return this.droppedInHandOver.splice(0);
  }

  /**
   * Exclusive ownership: an entry the gate refused (or dropped with its epoch) before its handler
   * was called stays pending with the count its read or its start wrote, and the fence refuses the
   * write that would give it back: its replay here does (see UnstartedDeliveries).
   */
  private rememberUnstarted(entry: HeldEntry): void {
    if (!entry.invoked) this.unstarted.remember(entry.id, entry.deliveries, countOnHandBack(entry));
  }

  /** BatchHost: a batch may start (the same condition as a single entry's handler). */
  mayStartBatch(): boolean {
    return !this.stopping && this.gate.mayRead();
  }

  /** BatchHost: the entries of a starting batch take handler slots. */
  occupy(entries: readonly HeldEntry[]): void {
    this.running += entries.length;
    const now = Date.now();
    for (const entry of entries) entry.startedAt = now;
  }

  /** BatchHost: an entry lost while it waited for its batch is dropped, as startWaiting does. */
  forget(entry: HeldEntry): void {
    this.held.remove(entry);
  }

  /** Called when this consumer no longer owns an entry (lease taken over by another consumer). */
  markLost(id: string): void {
    const entry = this.held.get(id);
    // Being parked (or parked, its slot not yet freed): gone from the PEL by this consumer's own
    // write; a renewal sent before that write was answered finds it gone. The write's own answer
    // says whether it was really taken.
    if (!entry || entry.lost || entry.acked || entry.parking) return;
    entry.markLost();
    this.rt.logger.warn(CONSUMER_MESSAGES.leaseLost(id, this.stream, this.group));
    this.rt.events.emit('lease-lost', this.ref(entry));
  }

  /**
   * Trimming deleted the payload of an entry this consumer holds, and Redis dropped it from the
   * PEL: it is no longer protected. If its handler fails it is parked with the fields still in
   * memory, so nothing disappears silently.
   */
  markTrimmed(id: string): void {
    const entry = this.held.get(id);
    if (!entry || entry.trimmed) return;
    entry.trimmed = true;
    this.rt.logger.error(CONSUMER_MESSAGES.trimmedWhilePending(id, this.stream, this.group));
  }

  /** The ack script found the entry owned by another consumer: it was not acked from here. */
  ackRejected(id: string): void {
    const entry = this.held.get(id);
    entry?.markLost();
    this.rt.logger.warn(CONSUMER_MESSAGES.ackRejected(id, this.stream, this.group));
    const { stream, group, consumer } = this;
    this.rt.events.emit('lease-lost', { stream, group, consumer, id, deliveries: entry?.deliveries ?? 0 });
  }

  /** Manual ack from a handler's context; every call for one entry shares one answer. */
  manualAck(entry: HeldEntry): Promise<boolean> {
    if (entry.ackInFlight) return entry.ackInFlight;
    if (entry.lost) return Promise.resolve(false);
    entry.acked = true;
    entry.ackInFlight = this.acks.addAndWait(entry.id, entry.readUnder);
    return entry.ackInFlight;
  }

  ref(entry: HeldEntry): EntryRef {
    return { stream: this.stream, group: this.group, consumer: this.consumer, id: entry.id, deliveries: entry.deliveries };
  }
}
