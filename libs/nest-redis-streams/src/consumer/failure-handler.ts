import { DeadLetterReason } from '../dead-letter-reason.js';
import { type FailureDecision, PARK_TRIMMED, countOnHandBack, onFailure } from './delivery-policy.js';
import type { EntryRef } from '../events/transport-events.js';
import { deadLetterMetadata, describeError, escapedOriginalFields } from '../dead-letter/dead-letter-record.js';
import type { EntryWrites } from './entry-writes.js';
import { FENCED } from '../ownership/fenced-writes.js';
import { recordHandlerError } from '../recovery/handler-errors.js';
import type { ConsumerRuntime } from './consumer-runtime.interface.js';
import type { HeldEntry } from './held-entry.js';
import { KeyBlocks } from './key-blocks.js';
import type { SettleOutcome } from './slot-owner.interface.js';
import type { ResolvedHandlerOptions } from './stream-subscription.js';
import { CONSUMER_MESSAGES } from './consumer.messages.js';
import { ENVELOPE } from '../constants.js';
import { rescheduleIfOwned } from '../schedule/index.js';
import { retryLaterDue, retryLaterTime } from '../errors/retry-later.error.js';

/** The handler options a FailureHandler reads. */
export type FailureOptions = Pick<
  ResolvedHandlerOptions,
  'maxDeliveries' | 'minIdleTimeMs' | 'deadLetterStream' | 'onDeadLetter'
>;

/** How a retry waits (see `FailureDecision`'s `retry`). */
type RetryWrite = Pick<Extract<FailureDecision, { action: 'retry' }>, 'idleMs' | 'retryCount' | 'backoffMs'>;

/** The runtime services a FailureHandler writes through. */
export type FailureRuntime = Pick<ConsumerRuntime, 'commands' | 'events' | 'logger' | 'retryBackoffMs'>;

/**
 * What happens to an entry that did not succeed: a retry after a back-off, the dead-letter
 * stream, or (at shutdown) a hand-back to the group. Every write checks that this consumer still
 * owns the entry, and entries whose payload was trimmed meanwhile are parked, never dropped.
 * It reports an outcome instead of reaching back into the consumer: `lost` tells the caller that
 * another consumer owns the entry now.
 */
export class FailureHandler {
  /** `onDeadLetter: 'block-key'`: the blocks of the handler's ordering keys (null otherwise). */
  readonly blocks: KeyBlocks | null;

  constructor(
    /** The consumer's writes: its stream, group, name and fence. */
    private readonly writes: EntryWrites,
    private readonly options: FailureOptions,
    private readonly rt: FailureRuntime,
  ) {
    this.blocks = options.onDeadLetter === 'block-key' ? new KeyBlocks(writes, rt) : null;
  }

  /**
   * `blockKey` (block-key handlers): the entry's ordering key. A retry blocks it first; a park
   * marks it parked in the park's own script. A RetryLater past min-idle is not moved to the
   * schedule: its copy would come back as a new entry, held behind the block of its own key.
   * It waits in the PEL instead, retried after min-idle (no delivery of the budget used).
   */
  async fail(entry: HeldEntry, error: unknown, blockKey?: string): Promise<SettleOutcome> {
    const { stream, group } = this.writes;
    const { maxDeliveries, minIdleTimeMs } = this.options;
    const { message } = describeError(error);
    const decision = onFailure(entry, error, { maxDeliveries, minIdleTimeMs, retryBackoffMs: this.rt.retryBackoffMs });
    if (decision.action === 'keep-ack') {
      this.rt.logger.error(CONSUMER_MESSAGES.failedAfterAck(entry.id, stream, group, message));
      return 'acked';
    }
    if (decision.action === 'reschedule') {
      if (blockKey === undefined) return this.reschedule(entry, decision.retryAt, error);
      return this.retry(entry, error, { idleMs: 0, retryCount: Math.max(0, entry.deliveries - 1), backoffMs: 0 }, blockKey);
    }
    // A retry the handler asked for (RetryLater) is not a failure: no error log, no `failed` event.
    if (retryLaterTime(error) === null) this.reportFailure(entry, error, message);
    if (decision.action === 'lost') return 'lost';
    if (decision.action === 'park') return this.park(entry, decision.reason, error, decision.requireOwner, blockKey);
    return this.retry(entry, error, decision, blockKey);
  }

  /**
   * The entry waits in the PEL for its retry: idle set to `idleMs`, count to `retryCount` (-1
   * unchanged), due after `backoffMs` (recorded for operators: the idle time is backdated).
   */
  private async retry(
    entry: HeldEntry,
    error: unknown,
    { idleMs, retryCount, backoffMs }: RetryWrite,
    blockKey: string | undefined,
  ): Promise<SettleOutcome> {
    const ended = blockKey === undefined ? null : await this.blocks?.markFailing(entry, blockKey);
    if (ended) return ended;
    try {
      const claimed = await this.writes.retry(entry.id, idleMs, retryCount, backoffMs);
      // The lease had run out: the entry stays pending here (or goes to the partition's new owner).
      if (claimed === FENCED) return 'left-pending';
      const [lost, trimmed] = claimed;
      if (trimmed.length > 0) return this.park(entry, PARK_TRIMMED.reason, error, PARK_TRIMMED.requireOwner, blockKey);
      return lost.length > 0 ? 'lost' : 'retry-scheduled';
    } catch (err) {
      this.rt.logger.warn(CONSUMER_MESSAGES.retryNotScheduled(entry.id, (err as Error).message));
      return 'left-pending';
    }
  }

  /** Logs a failed run, tells the `failed` listeners, and records its error for the console's pending view. */
  private reportFailure(entry: HeldEntry, error: unknown, message: string): void {
    const { stream, group, consumer } = this.writes;
    const { maxDeliveries } = this.options;
    this.rt.logger.error(
      CONSUMER_MESSAGES.handlerFailed(entry.id, stream, group, consumer, entry.deliveries, maxDeliveries, message),
    );
    this.rt.events.emit('failed', { ...this.ref(entry), error });
    // For the console's pending view: why it is still pending. Diagnostics only: a failure to
    // record it changes nothing about the retry or dead letter below.
    const errorClass = describeError(error).errorClass;
    const record = { id: entry.id, consumer, deliveries: entry.deliveries, errorClass, message };
    void recordHandlerError(this.rt.commands, stream, group, record).catch(() => undefined);
  }

  /**
   * A retry the handler asked for past min-idle: a copy of the entry waits in the stream's
   * schedule and the entry is acked, in one script and only while owned. Not a failure: no
   * `failed` event, no error log.
   */
  private async reschedule(entry: HeldEntry, retryAt: number, error: unknown): Promise<SettleOutcome> {
    const { stream } = this.writes;
    try {
      const due = retryLaterDue(error, retryAt);
      const member = await rescheduleIfOwned(this.rt.commands, this.writes, entry.id, due, ENVELOPE);
      if (member === 0) return this.park(entry, PARK_TRIMMED.reason, error, PARK_TRIMMED.requireOwner);
      if (member === null) return 'lost';
      this.rt.logger.debug?.(CONSUMER_MESSAGES.rescheduled(entry.id, stream, member, retryAt));
      return 'retry-scheduled';
    } catch (err) {
      this.rt.logger.warn(CONSUMER_MESSAGES.retryNotScheduled(entry.id, (err as Error).message));
      return 'left-pending';
    }
  }

  /**
   * Moves an entry to the dead-letter stream and acks it, atomically and only while owned; with
   * `blockKey`, the dead letter names the key it blocks and the key's block becomes `parked`
   * (without, in a block-key handler, the park script finds the key of a block this entry holds).
   */
  async park(
    entry: HeldEntry,
    reason: DeadLetterReason,
    error?: unknown,
    requireOwner = true,
    blockKey?: string,
  ): Promise<SettleOutcome> {
    const { stream, group, consumer } = this.writes;
    const dlq = this.options.deadLetterStream;
    const metadata = deadLetterMetadata({ reason, stream, id: entry.id, group, consumer, deliveries: entry.deliveries, error });
    if (blockKey !== undefined) metadata.push(ENVELOPE.blockedKey, blockKey);
    // Block-key handlers, key unknown (payload trimmed, undecodable): null has the park script look
    // for a block this entry holds, so its dead letter still releases the key. Not '': that is a key.
    const parkKey = blockKey ?? (this.blocks === null ? undefined : null);
    // Until the write's answer is handled, a lease renewal may find the entry gone from the PEL:
    // by this very write, not by another consumer's claim (see ConsumerSlots.markLost).
    entry.parking = true;
    try {
      // The script copies the payload from the stream itself, byte for byte; the fields held here
      // (decoded as UTF-8) are only the fallback for an entry trimmed away meanwhile.
      const fallback = escapedOriginalFields(entry.fields);
      const deadLetterId = await this.writes.park(entry.id, requireOwner, metadata, fallback, parkKey);
      if (deadLetterId === null || deadLetterId === FENCED) {
        entry.parking = false;
        return deadLetterId === null ? 'lost' : 'left-pending';
      }
      const cause = error === undefined ? undefined : describeError(error).message;
      this.rt.logger.warn(CONSUMER_MESSAGES.deadLettered(entry.id, stream, group, dlq, deadLetterId, reason, cause));
      this.rt.events.emit('dead-lettered', { ...this.ref(entry), reason, deadLetterStream: dlq, deadLetterId, count: 1 });
      return 'parked';
    } catch (err) {
      entry.parking = false;
      this.rt.logger.error(CONSUMER_MESSAGES.deadLetterFailed(entry.id, stream, (err as Error).message));
      return 'left-pending';
    }
  }

  /**
   * Hands entries back: idle set to min-idle so any consumer's reclaimer takes them next round,
   * and those whose handler was never called get back the delivery count they had before this
   * consumer's delivery (one script call per distinct count), so a deploy spends no delivery of
   * what it never ran. Those whose payload was trimmed meanwhile are parked with the fields held here.
   */
  async release(entries: HeldEntry[]): Promise<void> {
    const byCount = new Map<number, HeldEntry[]>();
    for (const entry of entries) {
      const count = countOnHandBack(entry);
      const same = byCount.get(count);
      if (same) same.push(entry);
      else byCount.set(count, [entry]);
    }
    try {
      const gone = new Set<string>();
      for (const [count, members] of byCount) {
        const claimed = await this.writes.handBack(
          members.map((entry) => entry.id),
          count,
        );
        // Fenced: the partition's next owner takes its whole PEL over, idle or not.
        if (claimed === FENCED) return;
        for (const id of claimed[1]) gone.add(id);
      }
      for (const entry of entries) {
        if (gone.has(entry.id)) await this.park(entry, PARK_TRIMMED.reason, undefined, PARK_TRIMMED.requireOwner);
      }
    } catch (err) {
      this.rt.logger.warn(CONSUMER_MESSAGES.releaseFailed(entries.length, (err as Error).message));
    }
  }

  private ref(entry: HeldEntry): EntryRef {
    const { stream, group, consumer } = this.writes;
    return { stream, group, consumer, id: entry.id, deliveries: entry.deliveries };
  }
}
