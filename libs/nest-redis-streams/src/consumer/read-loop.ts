import type { Logger } from '@nestjs/common';
import { claimEpochKey } from '../keys/index.js';
import { explainAclError } from '../redis/acl-hint.js';
import { isCluster } from '../redis/connection.factory.js';
import { type TrimAuditConnection, withInOrderAudit } from '../redis/scripts.js';
import { isNoGroupError } from '../redis/errors/reply-errors.js';
import { type StreamEntryReply, type XReadGroupReply, takeRows } from '../redis/replies.js';
import { readWithClaim, reportClaimedByRead } from '../recovery/claim-read.js';
import type { RecoveryTarget } from '../recovery/recovery-target.interface.js';
import { auditTrimLossBeforeRead } from '../recovery/trim-audit.js';
import type { StreamSubscription } from './stream-subscription.js';
import { CONSUMER_MESSAGES } from './consumer.messages.js';
import type { ConsumerRuntime } from './consumer-runtime.interface.js';
import { heldCountOfClaimRead } from './delivery-policy.js';
import type { EpochListener } from './ownership-gate.js';
import type { FencedRead, PartitionReader } from './partition-reader.js';
import type { EntrySink, ReadGate } from './read-gate.interface.js';
import { waitForSignal } from './wait-for-signal.js';

/**
 * The longest time between two CLAIM reads of a consumer: how late, at worst, a dead consumer's
 * entries are taken over after they became claimable (unless they are the oldest pending, whose
 * time the read learns). Each such read costs Redis about 2.5 µs more per entry than a plain read
 * (a script's reply is converted twice), so they are not every read.
 */
const CLAIM_READ_EVERY_MS = 1_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the read loop reads through and hands its entries to; built once by the consumer. */
export interface ReadLoopDeps {
  readonly gate: ReadGate;
  readonly sink: EntrySink;
  /** The consumer as recovery sees it: the trim audit and CLAIM reads report against it. */
  readonly target: RecoveryTarget;
  /** Exclusive ownership: the fenced reads of the partition. */
  readonly partitionReader?: PartitionReader;
  /** Creates the group (idempotent); the loop calls it again when the group disappeared. */
  readonly ensureGroup: () => Promise<void>;
}

/**
 * The read loop of one consumer: start-up (and every reconnect) replays this consumer's own
 * pending entries (ID `0`) before new ones (`>`); then plain reads, CLAIM reads (8.4+) or, under
 * exclusive ownership, fenced reads after a takeover of the partition's PEL. It reads only while
 * the sink has room and the gate lets it, takes a reply in only under the epoch it was issued
 * under, and backs off on errors. It decides nothing about what runs: the sink does.
 */
export class ReadLoop implements EpochListener {
  /** Time of the last successful read (or empty read) of the loop: a liveness signal. */
  lastReadAt = 0;
  /**
   * Since when the loop has been waiting for a free slot (0 while it reads). A loop that waits
   * for room is healthy as long as its handlers are: liveness looks at their age instead.
   */
  waitingForRoomSince = 0;
  private stopping = false;
  /** Set on every reconnect of the reader and every new epoch: read own pending entries first. */
  private replayOwnPending = false;
  private done: Promise<void> = Promise.resolve();
  private wakeUp: (() => void) | null = null;
  private readonly gate: ReadGate;
  private readonly sink: EntrySink;
  /** The claim epoch the read in flight was stamped with, given to what it returns. */
  private readUnder = '';
  private warnedOldClaimMark = false;
  /** The fenced read in flight (null when none): a hand-over waits for its answer (see readAnswered). */
  private fencedRead: Promise<unknown> | null = null;
  /** When the next CLAIM read is due (see readClaiming). */
  private nextClaimReadAt = 0;
  /** The reader, sending the trim-gap audit ahead of its read (see auditBeforeRead); null where it cannot. */
  private readonly inOrderAudit: TrimAuditConnection | null;
  private readonly quietOnceStopping: Pick<Logger, 'warn' | 'error'> = {
    warn: (message: string) => {
      if (!this.stopping) this.rt.logger.warn(message);
    },
    error: (message: string) => this.rt.logger.error(message),
  };

  constructor(
    private readonly subscription: StreamSubscription,
    private readonly rt: ConsumerRuntime,
    private readonly deps: ReadLoopDeps,
  ) {
    this.gate = deps.gate;
    this.sink = deps.sink;
    this.inOrderAudit = deps.partitionReader || isCluster(rt.reader) ? null : withInOrderAudit(rt.reader);
  }

  private get stream(): string {
    return this.subscription.stream;
  }
  private get group(): string {
    return this.subscription.options.group;
  }

  start(): void {
    // After a reconnect, replay this consumer's own PEL: a read whose reply was lost with the
    // connection (Redis restarted, CLIENT KILL) left entries pending under this name that nothing
    // would hand to a handler before min-idle passed and the reclaimer took them.
    this.rt.reader.on('ready', () => (this.replayOwnPending = true));
    this.done = this.run();
  }

  /** No more reads (a blocking read in flight ends with its reply, or when the caller interrupts it). */
  stop(): void {
    this.stopping = true;
    this.wake();
  }

  /** Resolves once the loop has ended. */
  ended(): Promise<void> {
    return this.done;
  }

  /** Ends a wait for room or for ownership: look again. */
  wake(): void {
    this.wakeUp?.();
  }

  /** EpochListener: what was read under the ending epoch is replayed from Redis, in order. */
  epochEnded(): void {
    this.replayOwnPending = true;
  }

  private async run(): Promise<void> {
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
      if (this.gate.fence && !this.gate.mayRead()) {
        await this.waitForOwnership();
        continue;
      }
      if (this.replayOwnPending) {
        this.replayOwnPending = false;
        replaying = true;
        cursor = '-';
      }
      const room = this.sink.room;
      if (room <= 0) {
        this.waitingForRoomSince = Date.now();
        await new Promise<void>((resolve) => (this.wakeUp = resolve));
        this.wakeUp = null;
        this.waitingForRoomSince = 0;
        continue;
      }
      try {
        if (this.gate.takeoverDue) {
          await this.takeOverPending(this.deps.partitionReader!);
          continue;
        }
        if (replaying) {
          const epoch = this.gate.epoch;
          const { consumer } = this.rt;
          const rows = await this.rt.commands.nrsReadOwnPending(this.stream, this.group, consumer, cursor, room);
          failures = 0;
          this.lastReadAt = Date.now();
          // Read under an older epoch: the new one replays again from the start.
          if (!this.gate.isCurrent(epoch)) continue;
          if (rows.length === 0) {
            replaying = false;
            continue;
          }
          cursor = rows[rows.length - 1][0];
          // Finished here with the ack not yet answered: pending in Redis, but done.
          const acking = this.sink.unsentAcks();
          const heldIds = this.sink.heldIds();
          takeRows(rows, ([id, deliveries, fields]) => {
            // Still running (or waiting) here after a reconnect: nothing to replay, nothing counted.
            if (heldIds.has(id) || acking.has(id)) return;
            this.sink.take(id, fields, Number(deliveries), true);
          });
          continue;
        }
        if (crossCheck) await this.auditBeforeRead();
        if (this.deps.partitionReader) {
          await this.readFenced(this.deps.partitionReader, room);
          continue;
        }
        // CLAIM reads (8.4+): idle entries of dead consumers come with new ones, within a second of
        // becoming claimable. Not while an entry here has an expired lease (a hung handler): the
        // read would hand it back to this consumer and reset its idle time, hiding it from the others.
        // A CLAIM read counts a delivery of every entry it takes over, so it takes over no more
        // than can start now (claimRoom); with every slot busy it waits for the next turn of the
        // loop (after at most one blocking read) and the reclaimer's uncounted claims go on.
        let blockMs = this.rt.blockMs;
        const claimRoom = this.rt.claimRead && !this.sink.holdsExpiredLease() ? this.sink.claimRoom : 0;
        if (claimRoom > 0) {
          if (Date.now() >= this.nextClaimReadAt) {
            const found = await this.readClaiming(room, claimRoom);
            failures = 0;
            if (found > 0) {
              mayCrossTrimGap = found >= room;
              continue;
            }
          }
          // The plain read in between waits no longer than until the next CLAIM read is due.
          blockMs = Math.max(1, Math.min(blockMs, this.nextClaimReadAt - Date.now()));
        }
        this.readUnder = this.sink.claimEpoch;
        const reply = (await this.rt.reader.xreadgroup(
          'GROUP',
          this.group,
          this.rt.consumer,
          'COUNT',
          room,
          'BLOCK',
          blockMs,
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

  /**
   * The trim-gap audit before a read that may cross the gap. On a single-node reader it goes on
   * the reader itself, just ahead of the read, and is not awaited: Redis runs the two in the
   * order sent, so the read no longer waits a round trip for it. A cluster client may redirect
   * the one and not the other, and fenced reads go through their own scripts: there it runs on
   * the commands connection and the read waits for it.
   */
  private auditBeforeRead(): Promise<unknown> | undefined {
    const { target } = this.deps;
    if (!this.inOrderAudit) return auditTrimLossBeforeRead(target, this.rt.commands, this.rt.events, this.rt.logger);
    // Never rejects. Closing the reader to stop may fail it: nothing to report then.
    void auditTrimLossBeforeRead(target, this.inOrderAudit, this.rt.events, this.quietOnceStopping);
    return undefined;
  }

  private async recoverFromReadError(err: Error, failures: number, startId: string): Promise<void> {
    if (isNoGroupError(err)) {
      this.rt.logger.warn(CONSUMER_MESSAGES.groupDisappeared(this.stream, this.group, err.message, startId));
      try {
        await this.deps.ensureGroup();
        return;
      } catch (createErr) {
        err = createErr as Error;
      }
    }
    const delay = Math.min(100 * 2 ** Math.min(failures - 1, 6), 5_000);
    this.rt.logger.error(CONSUMER_MESSAGES.readFailed(this.stream, this.group, explainAclError(err, this.rt.aclUser), delay));
    await sleep(delay);
  }

  /**
   * One scripted CLAIM read (non-blocking; it raises the claim epoch when it took anything over,
   * so what it read is stamped like a plain read). Sent at most every CLAIM_READ_EVERY_MS between
   * plain reads, since a script's reply costs Redis more per entry than a plain read's; sooner
   * when a dead consumer's entry becomes claimable earlier, or at once while it keeps finding them.
   * It takes over at most `claimRoom` entries (what can start now) and reads new ones up to `room`.
   * Returns how many entries it read.
   */
  private async readClaiming(room: number, claimRoom: number): Promise<number> {
    const isHeld = (id: string) => this.sink.holds(id) || this.sink.unsentAcks().has(id);
    const { minIdleTimeMs } = this.subscription.options;
    const read = await readWithClaim(this.rt.reader, this.deps.target, room, minIdleTimeMs, isHeld, claimRoom);
    this.lastReadAt = Date.now();
    if (read.epoch === '') this.warnOldClaimMarkOnce();
    const found = read.fresh.length + read.claimed.length + read.alreadyHeld.length;
    let next = CLAIM_READ_EVERY_MS;
    if (read.claimed.length > 0 && read.claimed.length + read.alreadyHeld.length >= claimRoom) next = 0;
    else if (found === 0 && read.claimableInMs > 0) next = Math.min(next, read.claimableInMs);
    this.nextClaimReadAt = this.lastReadAt + next;
    this.readUnder = this.rt.checkEveryAck ? '' : read.epoch;
    takeRows(read.fresh, this.acceptRead);
    for (const c of read.claimed) {
      // Counted by the read already; like an XAUTOCLAIM'd entry it is checked to be still ours
      // when it starts (taken over while it waited for a slot: not run), which sets the same
      // count again.
      this.sink.take(c.id, c.fields, heldCountOfClaimRead(c.deliveries), true);
    }
    if (read.claimed.length > 0) reportClaimedByRead(this.rt, this.deps.target, read.claimed.length);
    return found;
  }

  /**
   * Once per loop: a consumer of 0.2 (unscripted CLAIM reads) marked the group, so every ack of it
   * runs the owner check. The mark stays after the last such consumer is gone; say how to remove it.
   */
  private warnOldClaimMarkOnce(): void {
    if (this.warnedOldClaimMark) return;
    this.warnedOldClaimMark = true;
    this.rt.logger.warn(CONSUMER_MESSAGES.oldClaimReadsMark(this.stream, this.group, claimEpochKey(this.stream, this.group)));
  }

  /** An entry read for the first time (its delivery was counted by the read). */
  private readonly acceptRead = (row: StreamEntryReply): void => this.sink.take(row[0], row[1], 1, false, this.readUnder);

  /**
   * Waits for a grant or renewal (or a stop). The loop is idle on purpose, so it counts as alive:
   * a standby instance must not fail its liveness check.
   */
  private async waitForOwnership(): Promise<void> {
    await waitForSignal((resolve) => (this.wakeUp = resolve), this.rt.blockMs);
    this.wakeUp = null;
    this.lastReadAt = Date.now();
  }

  /** After a grant: the partition's whole PEL becomes this consumer's, then is replayed in order. */
  private async takeOverPending(reader: PartitionReader): Promise<void> {
    const epoch = this.gate.epoch;
    if (!(await reader.takeOverPending((ids) => this.deps.target.tombstone(ids)))) return;
    // A grant (or a hand-over) came while it ran: the takeover of that one is still to do.
    if (!this.gate.tookOver(epoch)) return;
    this.replayOwnPending = true;
  }

  /**
   * Resolves once the fenced read in flight was answered and its reply handled, or after
   * `timeoutMs`; undefined when none is in flight, so an idle partition's hand-over adds no turn.
   * A hand-over waits for it: what a read answered after the hand-over began brought is dropped,
   * and handed back while the partition is still held (see ConsumerEngine.handOver).
   */
  readAnswered(timeoutMs: number): Promise<void> | undefined {
    const read = this.fencedRead;
    if (read === null) return undefined;
    return waitForSignal((resolve) => void read.then(resolve, resolve), timeoutMs);
  }

  private async readFenced(reader: PartitionReader, room: number): Promise<void> {
    const epoch = this.gate.epoch;
    this.readUnder = this.sink.claimEpoch;
    let handled!: () => void;
    this.fencedRead = new Promise<void>((resolve) => (handled = resolve));
    let read: FencedRead;
    try {
      read = await reader.read(room);
      if (read !== 'not-held') this.lastReadAt = Date.now();
      // Answered after a hand-over, a loss or a new grant: what it read stays pending, for the
      // takeover of whoever owns the partition now (this instance included), which runs it in
      // order. Taken in, it would start before the entries pending ahead of it.
      if (typeof read === 'object' && !this.gate.isCurrent(epoch)) return this.sink.dropped(read.entries);
      if (typeof read === 'object') takeRows(read.entries, this.acceptRead);
    } finally {
      // What the reply brought is taken in or dropped: a hand-over waiting for it may go on.
      this.fencedRead = null;
      handled();
    }
    if (read === 'refused') return this.waitForOwnership(); // the coordinator finds out why
    if (read !== 'not-held' && read.entries.length === 0) return reader.waitForNew(read.lastId);
  }
}
