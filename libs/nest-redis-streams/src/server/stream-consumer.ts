import type { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import type { DecodedEntry } from '../codec/envelope.js';
import type { RedisStreamsContext } from '../context/redis-streams.context.js';
import type { EntryRef, TransportEvents } from '../events/transport-events.js';
import type { PayloadDeserializer } from '../interfaces/payload-codec.interface.js';
import { DeadLetterReason } from '../recovery/dead-letter-record.js';
import { isBusyGroupError, isNoGroupError } from '../redis/errors.js';
import type { StreamEntryReply, XReadGroupReply } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { AckBatcher } from './ack-batcher.js';
import { EntryDispatcher, logSafely, type SlotOwner } from './entry-dispatcher.js';
import { FailureHandler } from './failure-handler.js';
import { FifoQueue } from './fifo-queue.js';
import { HeldEntry } from './held-entry.js';
import type { StreamSubscription } from './stream-subscription.js';

/** What a consumer needs from the server that owns it. */
export interface ConsumerRuntime {
  consumer: string;
  blockMs: number;
  retryBackoffMs: number;
  deserializer: PayloadDeserializer;
  commands: ScriptedRedis;
  reader: Redis;
  events: TransportEvents;
  logger: Logger;
  /** Requests are answered only on reply streams under this prefix. */
  replyStreamPrefix: string;
  /** OpenTelemetry is installed and configured: run handlers in consumer spans. */
  tracing: boolean;
  /** Calls the handler; the promise resolves with what it returned (an Observable is not awaited). */
  invoke(subscription: StreamSubscription, entry: DecodedEntry, ctx: RedisStreamsContext): Promise<unknown>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Reads one stream in one consumer group and runs its handler with bounded concurrency.
 * Start-up drains this consumer's own pending entries (ID `0`) before new ones (`>`); every
 * entry is acknowledged only after its handler succeeded.
 */
export class StreamConsumer implements SlotOwner {
  /** Entries read and not yet settled, by id: running, waiting for a slot, or being acked. */
  readonly held = new Map<string, HeldEntry>();
  /** Time of the last successful read (or empty read) of the loop: a liveness signal. */
  lastReadAt = 0;
  private readonly waiting = new FifoQueue<HeldEntry>();
  private running = 0;
  private startingWaiting = false;
  private stopping = false;
  /** Set on start and on every reconnect of the reader: read own pending entries (ID 0) first. */
  private replayOwnPending = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wake: (() => void) | null = null;
  private idle: (() => void) | null = null;
  private readonly acks: AckBatcher;
  private readonly parking: FailureHandler;
  private readonly dispatcher: EntryDispatcher;

  constructor(readonly subscription: StreamSubscription, private readonly rt: ConsumerRuntime) {
    const { stream, options } = subscription;
    this.parking = new FailureHandler(this, rt);
    this.acks = new AckBatcher(
      rt.commands, stream, options.group, rt.consumer,
      (id) => this.ackRejected(id),
      (count) => count > 0 && rt.events.emit('acked', { stream, group: options.group, count }),
      (err, ids) =>
        rt.logger.error(
          `Ack of ${ids.length} entries of stream "${stream}" group "${options.group}" failed: ${err.message}. ` +
            'They stay pending and will be delivered again.',
        ),
    );
    this.dispatcher = new EntryDispatcher(this, subscription, rt, this.acks, this.parking);
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
      await this.rt.commands.nrsCreateGroup(this.stream, this.group, this.subscription.options.startId);
    } catch (err) {
      if (!isBusyGroupError(err)) throw err;
    }
  }

  /**
   * Stops reading, waits up to `timeoutMs` for running handlers, sends the acks of those that
   * finished and hands every unfinished entry back (idle set to min-idle, so another instance
   * can reclaim it at once instead of waiting). Nothing is acknowledged that did not succeed.
   */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.wake?.();
    // Disconnecting interrupts the blocking XREADGROUP; entries it may have been delivering stay
    // in this consumer's PEL and are replayed or reclaimed, never lost.
    this.rt.reader.disconnect();
    await this.loopDone;
    this.waiting.clear();
    if (this.running > 0) {
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve) => {
        this.idle = resolve;
        timer = setTimeout(resolve, timeoutMs);
      });
      clearTimeout(timer);
    }
    await this.acks.drain();
    const unfinished = [...this.held.keys()];
    if (unfinished.length > 0) await this.parking.release(unfinished);
  }

  /** Takes entries claimed from other consumers (XAUTOCLAIM) into the same dispatch path. */
  async acceptClaimed(entries: StreamEntryReply[]): Promise<number> {
    const fresh = entries.filter(([id]) => !this.held.has(id));
    if (fresh.length === 0) return 0;
    const counts = await this.deliveryCounts(fresh);
    for (const [id, fields] of fresh) this.accept(new HeldEntry(id, fields, counts.get(id) ?? 1, this));
    return fresh.length;
  }

  /** Writes tombstones for pending entries whose payload Redis had already trimmed away. */
  async tombstone(ids: string[]): Promise<void> {
    for (const id of ids) {
      const entry = new HeldEntry(id, null, 0, this);
      await this.parking.park(entry, DeadLetterReason.PAYLOAD_TRIMMED, undefined, false);
    }
  }

  /** Called when this consumer no longer owns an entry (lease taken over by another consumer). */
  markLost(id: string): void {
    const entry = this.held.get(id);
    if (!entry || entry.lost || entry.acked) return;
    entry.markLost();
    this.rt.logger.warn(
      `Lost entry ${id} of stream "${this.stream}" group "${this.group}" to another consumer; ` +
        'this consumer will not ack or park it. Raise minIdleTimeMs if handlers are slower than it.',
    );
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
    this.rt.logger.error(
      `Entry ${id} of stream "${this.stream}" was trimmed away while group "${this.group}" still had it pending. ` +
        'Trim with the safe trimmer (never below the oldest pending entry) to prevent this.',
    );
  }

  /** The ack script found the entry owned by another consumer: it was not acked from here. */
  private ackRejected(id: string): void {
    const entry = this.held.get(id);
    entry?.markLost();
    this.rt.logger.warn(
      `Did not ack entry ${id} of stream "${this.stream}" group "${this.group}": another consumer reclaimed it ` +
        'while this one was handling it, so the new owner acks it. Raise minIdleTimeMs or keep leaseRenewal on.',
    );
    this.rt.events.emit('lease-lost', { stream: this.stream, group: this.group, consumer: this.consumer, id, deliveries: entry?.deliveries ?? 0 });
  }

  /** Manual ack from a handler's context. */
  manualAck(entry: HeldEntry): Promise<boolean> {
    if (entry.lost) return Promise.resolve(false);
    entry.acked = true;
    return this.acks.addAndWait(entry.id);
  }

  private async readLoop(): Promise<void> {
    const { options } = this.subscription;
    let cursor: string | null = '0';
    let failures = 0;
    while (!this.stopping) {
      if (this.replayOwnPending) {
        this.replayOwnPending = false;
        cursor = '0';
      }
      const room = this.room;
      if (room <= 0) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = null;
        continue;
      }
      try {
        // Own pending entries first (a restart replays them), then new ones.
        const reply = (cursor !== null
          ? await this.rt.reader.xreadgroup('GROUP', this.group, this.consumer, 'COUNT', room, 'STREAMS', this.stream, cursor)
          : await this.rt.reader.xreadgroup(
              'GROUP', this.group, this.consumer, 'COUNT', room, 'BLOCK', this.rt.blockMs, 'STREAMS', this.stream, '>',
            )) as XReadGroupReply;
        failures = 0;
        this.lastReadAt = Date.now();
        const entries = reply?.[0]?.[1] ?? [];
        if (cursor !== null) {
          if (entries.length === 0) {
            cursor = null;
            continue;
          }
          cursor = entries[entries.length - 1][0];
          // Entries still in flight here are pending too; only the ones nobody handles are new.
          // (Re-reading them raises their delivery count by one; that is the price of a replay.)
          const orphans = entries.filter(([id]) => !this.held.has(id));
          if (orphans.length === 0) continue;
          const counts = await this.deliveryCounts(orphans);
          for (const [id, fields] of orphans) this.accept(new HeldEntry(id, fields, counts.get(id) ?? 1, this));
        } else {
          for (const [id, fields] of entries) this.accept(new HeldEntry(id, fields, 1, this));
        }
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
      this.rt.logger.warn(
        `Stream "${this.stream}" or its group "${this.group}" disappeared (${err.message}); ` +
          `re-creating the group at "${startId}" with MKSTREAM and reading on.`,
      );
      try {
        await this.ensureGroup();
        return;
      } catch (createErr) {
        err = createErr as Error;
      }
    }
    const delay = Math.min(100 * 2 ** Math.min(failures - 1, 6), 5_000);
    this.rt.logger.error(
      `Reading stream "${this.stream}" group "${this.group}" failed (${err.message}); retrying in ${delay} ms.`,
    );
    await sleep(delay);
  }

  private accept(entry: HeldEntry): void {
    this.held.set(entry.id, entry);
    if (this.running < this.subscription.options.concurrency) this.run(entry);
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
    try {
      this.dispatcher.dispatch(entry);
    } catch (err) {
      // Only a throwing event listener gets here; the entry stays pending and is redelivered.
      this.settledUnexpectedly(entry, err);
    }
  }

  settledUnexpectedly(entry: HeldEntry, err: unknown): void {
    logSafely(this.rt, `Unexpected failure settling entry ${entry.id} of "${this.stream}": ${(err as Error)?.stack ?? err}`);
    this.settled(entry);
  }

  /** Frees the entry's slot; once per entry, whichever path gets here first. */
  settled(entry: HeldEntry): void {
    if (entry.settled) return;
    entry.settled = true;
    this.running--;
    if (this.held.get(entry.id) === entry) this.held.delete(entry.id);
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
    if (this.startingWaiting) return;
    this.startingWaiting = true;
    try {
      const { concurrency } = this.subscription.options;
      while (this.running < concurrency && this.waiting.size > 0 && !this.stopping) {
        const next = this.waiting.shift()!;
        if (next.lost) this.held.delete(next.id);
        else this.run(next);
      }
    } finally {
      this.startingWaiting = false;
    }
  }

  /** Delivery counts from the PEL for entries read by id or claimed (XREADGROUP `>` is always 1). */
  private async deliveryCounts(entries: StreamEntryReply[]): Promise<Map<string, number>> {
    const ids = entries.map(([id]) => id);
    const counts = await this.rt.commands.nrsDeliveryCounts(this.stream, this.group, ...ids);
    return new Map(ids.map((id, i) => [id, Number(counts[i]) || 1]));
  }

  ref(entry: HeldEntry): EntryRef {
    return { stream: this.stream, group: this.group, consumer: this.consumer, id: entry.id, deliveries: entry.deliveries };
  }
}
