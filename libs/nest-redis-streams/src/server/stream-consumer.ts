import { PARK_TRIMMED, countsInRedisOnStart, deliveryOnStart, heldCountOfClaimRead } from '../consumer/delivery-policy.js';
import type { EntryRef } from '../events/transport-events.js';
import { explainAclError, isScriptPermissionError, scriptPermissionFix } from '../redis/acl-hint.js';
import { CREATE_GROUP_COMMANDS } from '../redis/lua/create-group.js';
import { isBusyGroupError, isNoGroupError } from '../redis/errors.js';
import { type StreamEntryReply, type XReadGroupReply, takeRows } from '../redis/replies.js';
import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import { AckBatcher } from './ack-batcher.js';
import { BatchDispatcher } from './batch/batch-dispatcher.js';
import { BatchRunner, type BatchHost } from './batch/batch-runner.js';
import { BATCH_MESSAGES } from './batch/batch.messages.js';
import { batchOptionsOf } from './batch/resolve-batch.js';
import type { ConsumerRuntime } from './consumer-runtime.interface.js';
import { EntryDispatcher, logSafely } from './entry-dispatcher.js';
import { FailureHandler } from './failure-handler.js';
import { FifoQueue } from './fifo-queue.js';
import { HeldEntry } from './held-entry.js';
import { HeldEntries } from './held-entries.js';
import type { RecoveryTarget } from '../recovery/recovery-target.interface.js';
import { auditTrimLossBeforeRead } from '../recovery/trim-audit.js';
import { FENCED } from '../ownership/fenced-writes.js';
import { EntryWrites } from '../consumer/entry-writes.js';
import type { OwnedPartition } from '../ownership/owned-partition.interface.js';
import { partitionOwnerKey } from '../ownership/ownership-keys.js';
import { PartitionFence } from '../ownership/partition-fence.js';
import { PartitionReader } from './partition-reader.js';
import { readWithClaim, reportClaimedByRead } from '../recovery/claim-read.js';
import { waitForSignal } from './wait-for-signal.js';
import type { SettleOutcome, SlotOwner } from './slot-owner.interface.js';
import type { StreamSubscription } from './stream-subscription.js';
import { SERVER_MESSAGES } from './server.messages.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads one stream in one consumer group and runs its handler with bounded concurrency.
 * Start-up drains this consumer's own pending entries (ID `0`) before new ones (`>`); every
 * entry is acknowledged only after its handler succeeded.
 */
export class StreamConsumer implements SlotOwner, BatchHost, RecoveryTarget, OwnedPartition {
  /** Entries read and not yet settled: running, waiting for a slot, or being acked. */
  readonly held = new HeldEntries();
  /** Time of the last successful read (or empty read) of the loop: a liveness signal. */
  lastReadAt = 0;
  /**
   * Since when the loop has been waiting for a free slot (0 while it reads). A loop that waits
   * for room is healthy as long as its handlers are: liveness looks at their age instead.
   */
  waitingForRoomSince = 0;
  private readonly waiting = new FifoQueue<HeldEntry>();
  private running = 0;
  private startingWaiting = false;
  private stopping = false;
  /** Set on every reconnect of the reader: read own pending entries first. */
  private replayOwnPending = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wake: (() => void) | null = null;
  private idle: (() => void) | null = null;
  private readonly acks: AckBatcher;
  /** The only way this consumer writes its entries (ack, claim, park), fenced when exclusive. */
  private readonly writes: EntryWrites;
  private readonly parking: FailureHandler;
  private readonly dispatcher: EntryDispatcher;
  /** Batch handlers: forms the batches and starts them (undefined: one entry per call). */
  private readonly batches?: BatchRunner;
  /** Exclusive ownership: this instance's hold on the partition (undefined: shared, read always). */
  readonly fence?: PartitionFence;
  /** Exclusive ownership: the fenced reads of the partition. */
  private readonly partitionReader?: PartitionReader;
  /** A new generation was granted: move the partition's whole PEL here before reading. */
  private takeover = false;
  /** Giving the partition up (or given up): nothing is read or started until acquired again. */
  private handingOver = false;
  /**
   * Exclusive ownership: the ownership epoch. It moves on with every new generation, hand-over
   * and loss, and when an entry read under it could not start (see mayStart): entries read, and
   * replies of reads or claims issued, under an older epoch are never started or taken in.
   */
  epoch = 0;

  constructor(
    readonly subscription: StreamSubscription,
    private readonly rt: ConsumerRuntime,
  ) {
    const { stream, options } = subscription;
    if (options.exclusive) {
      this.fence = new PartitionFence(partitionOwnerKey(stream, options.group), rt.member ?? rt.consumer);
      this.fence.onGranted(() => {
        // Acks refused while the lease had run out go again (under the same generation only).
        this.acks.retryRefused();
        this.wake?.();
        this.startWaiting();
      });
      this.partitionReader = new PartitionReader(rt, stream, options.group, this.fence);
    }
    const { deadLetterStream, minIdleTimeMs } = options;
    const scope = { stream, group: options.group, consumer: rt.consumer, fence: this.fence, deadLetterStream, minIdleTimeMs };
    this.writes = new EntryWrites(rt.commands, scope);
    this.parking = new FailureHandler(this.writes, options, rt);
    this.acks = new AckBatcher(
      this.writes,
      (id) => this.ackRejected(id),
      (count) => count > 0 && rt.events.emit('acked', { stream, group: options.group, count }),
      (err, ids) => rt.logger.error(SERVER_MESSAGES.ackFailed(ids.length, stream, options.group, err.message)),
    );
    this.dispatcher = new EntryDispatcher(this, subscription, rt, this.acks, this.parking);
    const batch = batchOptionsOf(options);
    if (batch) {
      if (subscription.kind === 'message') throw new InvalidOptionsError(BATCH_MESSAGES.requestHandler(stream));
      const batches = new BatchDispatcher(this, subscription, rt, this.acks, this.parking, this.dispatcher);
      const { concurrency, maxDeliveries } = options;
      this.batches = new BatchRunner(this, this.writes, { ...batch, concurrency, maxDeliveries }, (entries) =>
        batches.dispatch(entries),
      );
    }
  }

  get stream(): string {
    return this.subscription.stream;
  }
  get group(): string {
    return this.subscription.options.group;
  }
  get consumer(): string {
    return this.rt.consumer;
  }
  get options(): StreamSubscription['options'] {
    return this.subscription.options;
  }
  get partition(): number {
    return this.subscription.partition;
  }
  get heldCount(): number {
    return this.held.size;
  }
  heldEntries(): Iterable<HeldEntry> {
    return this.held.values();
  }
  /** How many more new entries the read loop may take. */
  get room(): number {
    return this.subscription.options.prefetchCount - this.held.size;
  }

  /**
   * How many entries the reclaimer may take. A saturated read loop refills every free slot at
   * once, so reclaimed entries get a reserve of their own (up to another prefetchCount) instead of
   * waiting for the load to stop: they are the ones that are already late. While they wait for a
   * slot, the read loop reads nothing new (held exceeds prefetchCount), so memory stays bounded.
   */
  get reclaimRoom(): number {
    return 2 * this.subscription.options.prefetchCount - this.held.size;
  }

  /** Creates the group (idempotent, MKSTREAM) and starts the read loop. */
  async start(): Promise<void> {
    await this.ensureGroup();
    // After a reconnect, replay this consumer's own PEL: a read whose reply was lost with the
    // connection (Redis restarted, CLIENT KILL) left entries pending under this name that nothing
    // would hand to a handler before min-idle passed and the reclaimer took them.
    this.rt.reader.on('ready', () => (this.replayOwnPending = true));
    this.loopDone = this.readLoop();
  }

  async ensureGroup(): Promise<void> {
    try {
      await this.rt.commands.nrsCreateGroup(
        this.stream,
        this.group,
        this.subscription.options.startId,
        this.rt.streamCounters ? '1' : '0',
      );
    } catch (err) {
      if (isBusyGroupError(err)) {
        // The group exists: fine.
      } else if (isScriptPermissionError(err)) {
        // Inside a script Redis does not say which command it refused: name what this one runs.
        throw new Error(scriptPermissionFix(err, this.rt.aclUser, 'create the consumer group', CREATE_GROUP_COMMANDS), {
          cause: err,
        });
      } else {
        throw err;
      }
    }
    // The replay reads the PEL without XREADGROUP, and a blocking read that returns nothing does
    // not register a consumer: without this an idle instance would not show in XINFO CONSUMERS.
    await this.rt.commands.xgroup('CREATECONSUMER', this.stream, this.group, this.consumer);
  }

  /**
   * Stops reading, waits up to `timeoutMs` for running handlers, sends the acks of those that
   * finished and hands every unfinished entry back (idle set to min-idle, so another instance
   * can reclaim it at once instead of waiting). Nothing is acknowledged that did not succeed.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopReading();
    // Disconnecting interrupts the blocking XREADGROUP; entries it may have been delivering stay
    // in this consumer's PEL and are replayed or reclaimed, never lost.
    this.rt.reader.disconnect();
    await this.loopDone;
    this.waiting.clear();
    this.batches?.clear();
    if (this.running > 0) await waitForSignal((resolve) => (this.idle = resolve), timeoutMs);
    await this.acks.drain();
    // Handed back from here on: a lease renewal must not claim them again, which would undo the
    // idle time the release sets and keep other consumers waiting a full min-idle for them.
    const unfinished = this.held.removeWhere();
    if (unfinished.length > 0) await this.parking.release(unfinished);
  }

  /**
   * First step of a shutdown: no more reads, and no entry starts any more. Entries claimed or
   * replayed from now on are only held, and stop() hands them back instead of running them.
   */
  stopReading(): void {
    this.stopping = true;
    this.wake?.();
  }

  /**
   * Takes entries claimed from other consumers (XAUTOCLAIM ... JUSTID) into the same dispatch
   * path. Like a replayed entry, each one's delivery is counted when its handler starts: a
   * reclaimed entry that only waited here for a slot when the process died spends nothing.
   */
  async acceptClaimed(ids: string[], epoch = this.epoch): Promise<number> {
    // Claimed under an older epoch: those are in this consumer's PEL, and the takeover or the
    // replay that the new epoch began runs them in order; taking them here would not.
    if (epoch !== this.epoch) return 0;
    const heldIds = this.held.ids();
    const finished = this.acks.unsent();
    const hung = this.hungAmong(ids);
    if (hung.length > 0) await this.handBack(hung);
    const fresh = ids.filter((id) => !heldIds.has(id) && !finished.has(id));
    if (fresh.length === 0) return 0;
    const rows = await this.rt.commands.nrsClaimedEntries(this.stream, this.group, ...fresh);
    if (epoch !== this.epoch) return 0;
    let accepted = 0;
    // Read again: the read loop may have taken some of them while the script ran.
    const heldNow = this.held.ids();
    for (const [id, deliveries, fields] of rows) {
      // 0: acked (or parked) by its previous owner between the claim and this read: not pending
      // any more, so running it would do the work twice.
      if (Number(deliveries) === 0 || heldNow.has(id)) continue;
      const entry = new HeldEntry(id, fields, Number(deliveries), this);
      entry.countOnStart = true;
      this.accept(entry);
      accepted++;
    }
    return accepted;
  }

  /** The ids among `ids` of held entries whose handler ran past maxHandlerMs (lease expired). */
  private hungAmong(ids: string[]): string[] {
    let hung: Set<string> | null = null;
    for (const entry of this.held.values()) if (entry.leaseExpired) (hung ??= new Set()).add(entry.id);
    return hung === null ? [] : ids.filter((id) => hung.has(id));
  }

  /**
   * A reclaim round claimed entries of handlers this consumer still runs past maxHandlerMs: their
   * lease is not renewed any more, so they turned idle for another instance to take over.
   * XAUTOCLAIM reset their idle time; left so, this consumer's every round would keep them from
   * the instances that could run them. Their idle is set back to min-idle: any other instance's
   * next round takes them. (A held entry whose lease is alive keeps the claim: it acts as a renewal.)
   */
  private async handBack(ids: string[]): Promise<void> {
    const released = await this.writes.handBack(ids);
    if (released === FENCED) return;
    for (const id of released[1]) this.markTrimmed(id);
  }

  /** Writes tombstones for pending entries whose payload Redis had already trimmed away. */
  async tombstone(ids: string[]): Promise<void> {
    for (const id of ids) {
      const entry = new HeldEntry(id, null, 0, this);
      await this.parking.park(entry, PARK_TRIMMED.reason, undefined, PARK_TRIMMED.requireOwner);
    }
  }

  /** Called when this consumer no longer owns an entry (lease taken over by another consumer). */
  markLost(id: string): void {
    const entry = this.held.get(id);
    // Being parked (or parked, its slot not yet freed): gone from the PEL by this consumer's own
    // write; a renewal sent before that write was answered finds it gone. The write's own answer
    // says whether it was really taken.
    if (!entry || entry.lost || entry.acked || entry.parking) return;
    entry.markLost();
    this.rt.logger.warn(SERVER_MESSAGES.leaseLost(id, this.stream, this.group));
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
    this.rt.logger.error(SERVER_MESSAGES.trimmedWhilePending(id, this.stream, this.group));
  }

  /** The ack script found the entry owned by another consumer: it was not acked from here. */
  private ackRejected(id: string): void {
    const entry = this.held.get(id);
    entry?.markLost();
    this.rt.logger.warn(SERVER_MESSAGES.ackRejected(id, this.stream, this.group));
    this.rt.events.emit('lease-lost', {
      stream: this.stream,
      group: this.group,
      consumer: this.consumer,
      id,
      deliveries: entry?.deliveries ?? 0,
    });
  }

  /** Manual ack from a handler's context; every call for one entry shares one answer. */
  manualAck(entry: HeldEntry): Promise<boolean> {
    if (entry.ackInFlight) return entry.ackInFlight;
    if (entry.lost) return Promise.resolve(false);
    entry.acked = true;
    entry.ackInFlight = this.acks.addAndWait(entry.id);
    return entry.ackInFlight;
  }

  private async readLoop(): Promise<void> {
    const { options } = this.subscription;
    // Start-up replays this consumer's own PEL (entries a crash or a shutdown timeout left).
    let replaying = true;
    let cursor = '-';
    let failures = 0;
    // Whether the next read may cross entries trimmed before the group read them: on servers that
    // forget such a loss once read past (rt.readForgetsTrimGap), the audit counts it first. Only a
    // read straight after a short one (the group was caught up, and this loop read on at once)
    // cannot: a full batch leaves a backlog, and so may any wait or error in between.
    let mayCrossTrimGap = true;
    while (!this.stopping) {
      const crossCheck = mayCrossTrimGap && this.rt.readForgetsTrimGap;
      mayCrossTrimGap = true;
      if (this.fence && !this.mayRead()) {
        await this.waitForOwnership();
        continue;
      }
      if (this.replayOwnPending) {
        this.replayOwnPending = false;
        replaying = true;
        cursor = '-';
      }
      const room = this.room;
      if (room <= 0) {
        this.waitingForRoomSince = Date.now();
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        this.waitingForRoomSince = 0;
        continue;
      }
      try {
        if (this.takeover) {
          await this.takeOverPending(this.partitionReader!);
          continue;
        }
        if (replaying) {
          const epoch = this.epoch;
          const rows = await this.rt.commands.nrsReadOwnPending(this.stream, this.group, this.consumer, cursor, room);
          failures = 0;
          this.lastReadAt = Date.now();
          // Read under an older epoch: the new one replays again from the start.
          if (epoch !== this.epoch) continue;
          if (rows.length === 0) {
            replaying = false;
            continue;
          }
          cursor = rows[rows.length - 1][0];
          // Finished here with the ack not yet answered: pending in Redis, but done.
          const acking = this.acks.unsent();
          const heldIds = this.held.ids();
          takeRows(rows, ([id, deliveries, fields]) => {
            // Still running (or waiting) here after a reconnect: nothing to replay, nothing counted.
            if (heldIds.has(id) || acking.has(id)) return;
            const entry = new HeldEntry(id, fields, Number(deliveries), this);
            entry.countOnStart = true;
            this.accept(entry);
          });
          continue;
        }
        if (crossCheck) await auditTrimLossBeforeRead(this, this.rt.commands, this.rt.events, this.rt.logger);
        if (this.partitionReader) {
          await this.readFenced(this.partitionReader, room);
          continue;
        }
        // CLAIM reads (8.4+): idle entries of dead consumers come with the new ones, as soon as they
        // are claimable. Not while an entry here has an expired lease (a hung handler): the read
        // would hand it back to this consumer and reset its idle time, hiding it from the others.
        if (this.rt.claimRead && !this.holdsExpiredLease()) {
          const { minIdleTimeMs } = this.subscription.options;
          const isHeld = (id: string) => this.held.get(id) !== undefined || this.acks.unsent().has(id);
          const read = await readWithClaim(this.rt.reader, this, room, this.rt.blockMs, minIdleTimeMs, isHeld);
          failures = 0;
          this.lastReadAt = Date.now();
          takeRows(read.fresh, this.acceptRead);
          for (const c of read.claimed) {
            // Counted by the read already; like an XAUTOCLAIM'd entry it is checked to be still
            // ours when it starts (taken over while it waited for a slot: not run), which sets the
            // same count again.
            const entry = new HeldEntry(c.id, c.fields, heldCountOfClaimRead(c.deliveries), this);
            entry.countOnStart = true;
            this.accept(entry);
          }
          if (read.claimed.length > 0) reportClaimedByRead(this.rt, this, read.claimed.length);
          continue;
        }
        const reply = (await this.rt.reader.xreadgroup(
          'GROUP',
          this.group,
          this.consumer,
          'COUNT',
          room,
          'BLOCK',
          this.rt.blockMs,
          'STREAMS',
          this.stream,
          '>',
        )) as XReadGroupReply;
        failures = 0;
        this.lastReadAt = Date.now();
        const entries = reply?.[0]?.[1];
        mayCrossTrimGap = (entries?.length ?? 0) >= room;
        if (entries) takeRows(entries, this.acceptRead);
      } catch (err) {
        // Closing the reader is how stop() interrupts a blocking read; whatever it throws then
        // (single node or cluster wording) is the end of the loop, not a fault.
        if (this.stopping) break;
        failures++;
        await this.recoverFromReadError(err as Error, failures, options.startId);
      }
    }
  }

  private async recoverFromReadError(err: Error, failures: number, startId: string): Promise<void> {
    if (isNoGroupError(err)) {
      this.rt.logger.warn(SERVER_MESSAGES.groupDisappeared(this.stream, this.group, err.message, startId));
      try {
        await this.ensureGroup();
        return;
      } catch (createErr) {
        err = createErr as Error;
      }
    }
    const delay = Math.min(100 * 2 ** Math.min(failures - 1, 6), 5_000);
    this.rt.logger.error(SERVER_MESSAGES.readFailed(this.stream, this.group, explainAclError(err, this.rt.aclUser), delay));
    await sleep(delay);
  }

  private holdsExpiredLease(): boolean {
    for (const entry of this.held.values()) if (entry.leaseExpired) return true;
    return false;
  }

  /** An entry read for the first time (its delivery was counted by the read). */
  private readonly acceptRead = (row: StreamEntryReply): void => this.accept(new HeldEntry(row[0], row[1], 1, this));

  /** Takes an entry in; the caller made sure its read was issued under the current epoch. */
  private accept(entry: HeldEntry): void {
    entry.epoch = this.epoch;
    this.held.add(entry);
    // While stopping, an entry is only held: stop() hands it back for another consumer.
    if (this.stopping) return;
    if (this.batches) return this.batches.push(entry);
    if (this.running < this.subscription.options.concurrency && this.mayRead()) this.run(entry);
    else this.waiting.push(entry);
  }

  /** The handler that has been running longest, for liveness checks. */
  longestRunning(now = Date.now()): { id: string; runningMs: number } | null {
    let oldest: HeldEntry | null = null;
    for (const entry of this.held.values()) {
      if (entry.startedAt > 0 && (!oldest || entry.startedAt < oldest.startedAt)) oldest = entry;
    }
    return oldest ? { id: oldest.id, runningMs: now - oldest.startedAt } : null;
  }

  /** Takes a slot and starts the entry on its way (see EntryDispatcher). */
  private run(entry: HeldEntry): void {
    this.running++;
    entry.startedAt = Date.now();
    if (entry.countOnStart) {
      this.countDeliveryThenDispatch(entry).catch((err: unknown) => this.settledUnexpectedly(entry, err));
      return;
    }
    this.dispatch(entry);
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
   * only read ahead is counted once, when it really runs).
   */
  private async countDeliveryThenDispatch(entry: HeldEntry): Promise<void> {
    entry.countOnStart = false;
    const next = deliveryOnStart(entry.deliveries);
    if (countsInRedisOnStart(entry.fields, next, this.subscription.options)) {
      const claimed = await this.writes.countDelivery([entry.id], next);
      // The lease had run out by Redis' clock: not started, pending for the partition's owner.
      if (claimed === FENCED) return this.settled(entry, 'unstarted');
      const [lost, trimmed] = claimed;
      if (lost.length > 0) {
        // Acked, parked or taken over since the replay read it: not this consumer's to run.
        entry.markLost();
        return this.settled(entry, 'lost');
      }
      if (trimmed.length > 0) entry.trimmed = true;
    }
    entry.deliveries = next;
    this.dispatch(entry);
  }

  settledUnexpectedly(entry: HeldEntry, err: unknown): void {
    logSafely(this.rt, SERVER_MESSAGES.settleFailed(entry.id, this.stream, (err as Error)?.stack ?? err));
    this.settled(entry, 'left-pending');
  }

  /** Frees the entry's slot; once per entry, whichever path gets here first. */
  settled(entry: HeldEntry, outcome: SettleOutcome): void {
    if (entry.settled) return;
    // The dead-letter or retry script found the entry owned by another consumer.
    if (outcome === 'lost' && !entry.lost) this.markLost(entry.id);
    entry.settled = true;
    this.running--;
    this.held.remove(entry);
    entry.batch?.entrySettled();
    // The gate refused an entry of the current epoch: end it, so that nothing read after the
    // entry starts before it (see mayStart).
    if (outcome === 'unstarted' && this.fence && entry.epoch === this.epoch) this.newEpoch();
    this.startWaiting();
    this.wake?.();
    if (this.running === 0) this.idle?.();
  }

  /**
   * Fills free handler slots from the waiting queue. An entry whose handler finishes synchronously
   * settles inside `run`, which lands here again: the flag turns that into another turn of this
   * loop instead of a recursion as deep as the queue.
   */
  private startWaiting(): void {
    if (this.batches) return this.batches.startReady();
    if (this.startingWaiting) return;
    this.startingWaiting = true;
    try {
      const { concurrency } = this.subscription.options;
      while (this.running < concurrency && this.waiting.size > 0 && !this.stopping && this.mayRead()) {
        const next = this.waiting.shift()!;
        if (next.lost) this.held.remove(next);
        else this.run(next);
      }
    } finally {
      this.startingWaiting = false;
    }
  }

  /**
   * SlotOwner: the ownership gate every handler start passes, right before the call (queued
   * behind an ordering key or not, replayed, reclaimed, in a batch). Shared consumption: always.
   * Exclusive ownership: only while the partition is held by the local clock, not being handed
   * over, and the entry was read under the current epoch, so a process paused past its lease
   * starts nothing its successor may be running. A refused entry stays pending in Redis, and its
   * refusal ends the epoch: every entry held and not started is dropped with it, and the PEL is
   * replayed in stream order once the partition is held again (under a new generation its new
   * owner's takeover does the same), so a renewal never lets a later entry start before it.
   */
  mayStart(entry: HeldEntry): boolean {
    return !entry.settled && (!this.fence || (entry.epoch === this.epoch && this.mayRead()));
  }

  /**
   * Exclusive ownership: nothing read under the epoch now ending starts any more. Entries waiting
   * for a slot or a batch are dropped, those that hold a slot but were not called settle as
   * unstarted; all stay pending in Redis, for the replay (or the new owner's takeover).
   */
  private newEpoch(): void {
    this.epoch++;
    this.replayOwnPending = true;
    this.waiting.clear();
    this.batches?.clear();
    for (const entry of this.held.values()) {
      if (entry.invoked) continue;
      if (entry.startedAt > 0) this.settled(entry, 'unstarted');
      else this.held.remove(entry);
    }
  }

  /** BatchHost: a batch may start (the same condition as a single entry's handler). */
  mayStartBatch(): boolean {
    return !this.stopping && this.mayRead();
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

  /**
   * Exclusive ownership: entries are read and handlers started only while the partition is held
   * by the local clock and not being handed over (always true when shared).
   */
  private mayRead(): boolean {
    return !this.fence || (this.fence.held && !this.handingOver);
  }

  /**
   * Waits for a grant or renewal (or a stop). The loop is idle on purpose, so it counts as alive:
   * a standby instance must not fail its liveness check.
   */
  private async waitForOwnership(): Promise<void> {
    await waitForSignal((resolve) => (this.wake = resolve), this.rt.blockMs);
    this.wake = null;
    this.lastReadAt = Date.now();
  }

  /** After a grant: the partition's whole PEL becomes this consumer's, then is replayed in order. */
  private async takeOverPending(reader: PartitionReader): Promise<void> {
    const epoch = this.epoch;
    if (!(await reader.takeOverPending((ids) => this.tombstone(ids)))) return;
    // A grant (or a hand-over) came while it ran: the takeover of that one is still to do.
    if (epoch !== this.epoch) return;
    this.takeover = false;
    this.replayOwnPending = true;
  }

  private async readFenced(reader: PartitionReader, room: number): Promise<void> {
    const epoch = this.epoch;
    const read = await reader.read(room);
    if (read === 'not-held') return;
    this.lastReadAt = Date.now();
    if (read === 'refused') return this.waitForOwnership(); // the coordinator finds out why
    // Answered after a hand-over, a loss or a new grant: what it read stays pending, for the
    // takeover of whoever owns the partition now (this instance included), which runs it in
    // order. Taken in, it would start before the entries pending ahead of it.
    if (epoch !== this.epoch) return;
    if (read.entries.length === 0) return reader.waitForNew(read.lastId);
    takeRows(read.entries, this.acceptRead);
  }

  /** OwnedPartition: a new generation was granted. */
  acquired(): void {
    this.handingOver = false;
    this.newEpoch();
    this.takeover = true;
    this.wake?.();
  }

  /**
   * OwnedPartition: cooperative hand-over. Nothing new is read or started; running handlers
   * finish (up to maxHandlerMs) and their acks go out under the generation still held; entries
   * that never started are handed back. The new owner takes them over in stream order.
   */
  async handOver(): Promise<void> {
    this.handingOver = true;
    const unstarted = this.held.removeWhere((entry) => entry.startedAt === 0);
    // Entries queued behind their ordering key do not start either: they settle as unstarted.
    this.newEpoch();
    this.wake?.();
    if (this.running > 0) await waitForSignal((resolve) => (this.idle = resolve), this.subscription.options.maxHandlerMs);
    // Still held (renewals go on during a hand-over): acks refused in a stall go out once more.
    this.acks.retryRefused();
    await this.acks.drain();
    if (unstarted.length > 0) await this.parking.release(unstarted);
    this.rt.logger.log(SERVER_MESSAGES.partitionsHandedOver(this.stream, this.group, unstarted.length));
  }

  /** OwnedPartition: taken while held. Entries not started are dropped; running ones are aborted. */
  lost(): void {
    this.newEpoch();
    for (const entry of this.held.values()) entry.markLost();
    // Acks the fence refused are not this instance's to send any more: reported lost.
    this.acks.retryRefused();
    this.wake?.();
  }

  ref(entry: HeldEntry): EntryRef {
    return { stream: this.stream, group: this.group, consumer: this.consumer, id: entry.id, deliveries: entry.deliveries };
  }
}
