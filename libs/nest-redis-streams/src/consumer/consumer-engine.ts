import { isScriptPermissionError, scriptPermissionFix } from '../redis/acl-hint.js';
import { CREATE_GROUP_COMMANDS } from '../redis/lua/create-group.js';
import { isBusyGroupError } from '../redis/errors/reply-errors.js';
import type { RecoveryTarget } from '../recovery/recovery-target.interface.js';
import { FENCED } from '../ownership/fenced-writes.js';
import type { OwnedPartition } from '../ownership/owned-partition.interface.js';
import { partitionOwnerKey } from '../keys/index.js';
import { PartitionFence } from '../ownership/partition-fence.js';
import type { StreamSubscription } from './stream-subscription.js';
import { CONSUMER_MESSAGES } from './consumer.messages.js';
import { AckBatcher } from './ack-batcher.js';
import type { ConsumerRuntime } from './consumer-runtime.interface.js';
import { PARK_TRIMMED } from './delivery-policy.js';
import { EntryWrites } from './entry-writes.js';
import { FailureHandler } from './failure-handler.js';
import { HeldEntry } from './held-entry.js';
import type { ConsumerView, HeldView, OwnershipView } from './consumer-view.js';
import { OwnershipGate } from './ownership-gate.js';
import { PartitionReader } from './partition-reader.js';
import { ReadLoop } from './read-loop.js';
import { ConsumerSlots } from './slots.js';

/**
 * Reads one stream in one consumer group and runs its handler with bounded concurrency; every
 * entry is acknowledged only after its handler succeeded. A facade: it wires the read loop
 * (read-loop.ts), the handler slots (slots.ts), the ownership gate (ownership-gate.ts) and the
 * entry writes (entry-writes.ts), and is what recovery (RecoveryTarget) and exclusive ownership
 * (OwnedPartition) see of the consumer.
 */
export class ConsumerEngine implements ConsumerView, RecoveryTarget, OwnedPartition {
  /** Exclusive ownership: this instance's hold on the partition (undefined: shared, read always). */
  readonly fence?: PartitionFence;
  private readonly gate: OwnershipGate;
  private readonly writes: EntryWrites;
  private readonly acks: AckBatcher;
  private readonly parking: FailureHandler;
  private readonly slots: ConsumerSlots;
  private readonly loop: ReadLoop;

  constructor(
    readonly subscription: StreamSubscription,
    private readonly rt: ConsumerRuntime,
  ) {
    const { stream, options } = subscription;
    const group = options.group;
    this.fence = options.exclusive ? new PartitionFence(partitionOwnerKey(stream, group), rt.member ?? rt.consumer) : undefined;
    const gate = (this.gate = new OwnershipGate(this.fence));
    const { deadLetterStream, minIdleTimeMs } = options;
    this.writes = new EntryWrites(rt.commands, {
      stream,
      group,
      consumer: rt.consumer,
      fence: this.fence,
      deadLetterStream,
      minIdleTimeMs,
      watchedAck: rt.watchedAck,
    });
    this.parking = new FailureHandler(this.writes, options, rt);
    this.acks = new AckBatcher(
      this.writes,
      (id) => this.slots.ackRejected(id),
      (count) => count > 0 && rt.events.emit('acked', { stream, group, count }),
      (err, ids) => rt.logger.error(CONSUMER_MESSAGES.ackFailed(ids.length, stream, group, err.message)),
    );
    // The slots wake the loop when room frees up; the loop feeds the slots.
    const wakeReader = () => this.loop.wake();
    this.slots = new ConsumerSlots(subscription, rt, {
      gate,
      writes: this.writes,
      acks: this.acks,
      parking: this.parking,
      wakeReader,
    });
    this.loop = new ReadLoop(subscription, rt, {
      gate,
      sink: this.slots,
      target: this,
      partitionReader: this.fence ? new PartitionReader(rt, stream, group, this.fence) : undefined,
      ensureGroup: () => this.ensureGroup(),
    });
    // A new epoch: the loop replays from Redis, then the slots drop what was read under the old one.
    gate.onEpochEnded(this.loop);
    gate.onEpochEnded(this.slots);
    this.fence?.onGranted(() => {
      // Acks refused while the lease had run out go again (under the same generation only).
      this.acks.retryRefused();
      this.loop.wake();
      this.slots.startWaiting();
    });
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
  /** Entries read and not yet settled: running, waiting for a slot, or being acked. */
  get held(): HeldView {
    return this.slots.held;
  }
  get heldCount(): number {
    return this.slots.held.size;
  }
  heldEntries(): Iterable<HeldEntry> {
    return this.slots.held.values();
  }
  /** How many more new entries the read loop may take. */
  get room(): number {
    return this.slots.room;
  }
  get readAhead(): number {
    return this.slots.readAheadLimit;
  }
  /** How many entries the reclaimer may take (see ConsumerSlots.reclaimRoom). */
  get reclaimRoom(): number {
    return this.slots.reclaimRoom;
  }
  /** The ownership epoch (see OwnershipGate). */
  get epoch(): number {
    return this.gate.epoch;
  }
  /** Time of the last successful read (or empty read) of the loop: a liveness signal. */
  get lastReadAt(): number {
    return this.loop.lastReadAt;
  }
  /** Since when the loop has been waiting for a free slot (0 while it reads). */
  get waitingForRoomSince(): number {
    return this.loop.waitingForRoomSince;
  }
  get ownership(): OwnershipView {
    const { fence, epoch } = this.gate;
    return { exclusive: fence !== undefined, held: fence?.held ?? true, generation: fence?.generation ?? null, epoch };
  }
  /** The handler that has been running longest, for liveness checks. */
  longestRunning(now = Date.now()): { id: string; runningMs: number } | null {
    return this.slots.longestRunning(now);
  }

  /** Creates the group (idempotent, MKSTREAM) and starts the read loop. */
  async start(): Promise<void> {
    await this.ensureGroup();
    this.loop.start();
  }

  async ensureGroup(): Promise<void> {
    try {
      await this.rt.commands.nrsCreateGroup(
        this.stream,
        this.writes.claimEpochKey,
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
    await this.loop.ended();
    this.slots.clearWaiting();
    // Awaited only while handlers run, so an idle consumer adds no turn before its acks drain (see handOver).
    if (this.slots.runningCount > 0) await this.slots.untilIdle(timeoutMs);
    await this.acks.drain();
    // Handed back from here on: a lease renewal must not claim them again, which would undo the
    // idle time the release sets and keep other consumers waiting a full min-idle for them.
    const unfinished = this.slots.held.removeWhere();
    if (unfinished.length > 0) await this.parking.release(unfinished);
  }

  /**
   * First step of a shutdown: no more reads, and no entry starts any more. Entries claimed or
   * replayed from now on are only held, and stop() hands them back instead of running them.
   */
  stopReading(): void {
    this.slots.stop();
    this.loop.stop();
  }

  /**
   * Takes entries claimed from other consumers (XAUTOCLAIM ... JUSTID) into the same dispatch
   * path. Like a replayed entry, each one's delivery is counted when its handler starts: a
   * reclaimed entry that only waited here for a slot when the process died spends nothing.
   */
  async acceptClaimed(ids: string[], epoch = this.gate.epoch): Promise<number> {
    // Claimed under an older epoch: those are in this consumer's PEL, and the takeover or the
    // replay that the new epoch began runs them in order; taking them here would not.
    if (!this.gate.isCurrent(epoch)) return 0;
    const heldIds = this.slots.heldIds();
    const finished = this.acks.unsent();
    const hung = this.slots.hungAmong(ids);
    if (hung.length > 0) await this.handBack(hung);
    const fresh = ids.filter((id) => !heldIds.has(id) && !finished.has(id));
    if (fresh.length === 0) return 0;
    const rows = await this.rt.commands.nrsClaimedEntries(this.stream, this.group, ...fresh);
    if (!this.gate.isCurrent(epoch)) return 0;
    let accepted = 0;
    // Read again: the read loop may have taken some of them while the script ran.
    const heldNow = this.slots.heldIds();
    for (const [id, deliveries, fields] of rows) {
      // -1: acked (or parked) by its previous owner between the claim and this read: not pending
      // any more, so running it would do the work twice. (0 is pending: a count set back by a deferral.)
      if (Number(deliveries) < 0 || heldNow.has(id)) continue;
      this.slots.take(id, fields, Number(deliveries), true);
      accepted++;
    }
    return accepted;
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
    for (const id of released[1]) this.slots.markTrimmed(id);
  }

  /** Writes tombstones for pending entries whose payload Redis had already trimmed away. */
  async tombstone(ids: string[]): Promise<void> {
    for (const id of ids) {
      const entry = new HeldEntry(id, null, 0, this.slots);
      await this.parking.park(entry, PARK_TRIMMED.reason, undefined, PARK_TRIMMED.requireOwner);
    }
  }

  /** RecoveryTarget: this consumer no longer owns an entry (lease taken over by another consumer). */
  markLost(id: string): void {
    this.slots.markLost(id);
  }

  /** RecoveryTarget: the entry's payload was trimmed while held (see ConsumerSlots.markTrimmed). */
  markTrimmed(id: string): void {
    this.slots.markTrimmed(id);
  }

  /** OwnedPartition: a new generation was granted. */
  acquired(): void {
    this.gate.acquired();
    this.loop.wake();
  }

  /**
   * OwnedPartition: cooperative hand-over. Nothing new is read or started; running handlers
   * finish (up to maxHandlerMs) and their acks go out under the generation still held; entries
   * that never started are handed back. The new owner takes them over in stream order.
   */
  async handOver(): Promise<void> {
    this.gate.beginHandOver();
    const unstarted = this.slots.held.removeWhere((entry) => entry.startedAt === 0);
    // Entries queued behind their ordering key (or counting their delivery) do not start either:
    // the new epoch settles them as unstarted, and they are handed back with the rest, so the
    // delivery their start counted is given back too (see countOnHandBack).
    for (const entry of this.slots.held.values()) if (!entry.invoked) unstarted.push(entry);
    this.gate.newEpoch();
    this.loop.wake();
    // No wait while nothing runs: an idle partition is released as soon as its acks drain, not a
    // turn later, so the taker's next round usually finds it free.
    if (this.slots.runningCount > 0) await this.slots.untilIdle(this.subscription.options.maxHandlerMs);
    // Still held (renewals go on during a hand-over): acks refused in a stall go out once more.
    this.acks.retryRefused();
    await this.acks.drain();
    // A read answered after the hand-over began brought entries that were dropped with a delivery
    // counted: given back here while the partition is still held, the next owner takes them over
    // as never delivered (its takeover counts nothing). Waited for no longer than a lease.
    const answered = this.loop.readAnswered(this.subscription.options.exclusive?.leaseMs ?? 0);
    if (answered) await answered;
    unstarted.push(...this.slots.takeDroppedInHandOver());
    if (unstarted.length > 0) await this.parking.release(unstarted);
    this.rt.logger.log(CONSUMER_MESSAGES.partitionsHandedOver(this.stream, this.group, unstarted.length));
  }

  /** OwnedPartition: taken while held. Entries not started are dropped; running ones are aborted. */
  lost(): void {
    this.gate.newEpoch();
    for (const entry of this.slots.held.values()) entry.markLost();
    // Acks the fence refused are not this instance's to send any more: reported lost.
    this.acks.retryRefused();
    this.loop.wake();
  }
}
