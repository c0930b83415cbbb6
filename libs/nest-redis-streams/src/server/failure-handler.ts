import { isDeferral } from '../errors/event-in-progress.error.js';
import { isNonRetryable } from '../errors/non-retryable.error.js';
import { DeadLetterReason, deadLetterMetadata, describeError, escapedOriginalFields } from '../recovery/dead-letter-record.js';
import type { HeldEntry } from './held-entry.js';
import type { ConsumerRuntime, StreamConsumer } from './stream-consumer.js';

/**
 * What happens to an entry that did not succeed: a retry after a back-off, the dead-letter
 * stream, or (at shutdown) a hand-back to the group. Every write checks that this consumer still
 * owns the entry, and entries whose payload was trimmed meanwhile are parked, never dropped.
 */
export class FailureHandler {
  constructor(
    private readonly owner: StreamConsumer,
    private readonly rt: ConsumerRuntime,
  ) {}

  async fail(entry: HeldEntry, error: unknown): Promise<void> {
    const { maxDeliveries, minIdleTimeMs } = this.owner.subscription.options;
    const { message } = describeError(error);
    if (entry.acked) {
      // The handler acknowledged the entry itself (manual ack) and failed afterwards: its ack
      // stands. A retry or a dead letter would run acknowledged work again (a re-drive would
      // duplicate it), and parking would race the ack and report a reclaim that never happened.
      this.rt.logger.error(
        `Handler failed after it acknowledged entry ${entry.id} of stream "${this.owner.stream}" (group "${this.owner.group}"): ` +
          `${message}. The ack stands: the entry is neither retried nor dead-lettered.`,
      );
      return;
    }
    this.rt.logger.error(
      `Handler failed for entry ${entry.id} of stream "${this.owner.stream}" (group "${this.owner.group}", consumer ` +
        `"${this.owner.consumer}", delivery ${entry.deliveries}/${maxDeliveries}): ${message}`,
    );
    this.rt.events.emit('failed', { ...this.owner.ref(entry), error });
    if (entry.lost) return;
    if (entry.trimmed) return this.park(entry, DeadLetterReason.PAYLOAD_TRIMMED, error, false);
    if (isNonRetryable(error)) return this.park(entry, DeadLetterReason.NON_RETRYABLE, error);
    // A deferral (the event is being handled elsewhere) is not an attempt: the delivery count is
    // set back so that the next claim restores it, and no retry budget is used.
    const deferred = isDeferral(error);
    if (!deferred && entry.deliveries >= maxDeliveries) return this.park(entry, DeadLetterReason.MAX_DELIVERIES, error);
    // Backdate the idle time so the reclaimer retries after the backoff, not at once and not
    // only after a full min-idle (Redis caps delivery times at "now", so min-idle is the cap).
    const backoff = Math.min(minIdleTimeMs, this.rt.retryBackoffMs * (deferred ? 1 : 2 ** (entry.deliveries - 1)));
    try {
      const [, trimmed] = await this.rt.commands.nrsClaimIfOwned(
        this.owner.stream, this.owner.group, this.owner.consumer, minIdleTimeMs - backoff,
        deferred ? Math.max(0, entry.deliveries - 1) : -1, entry.id,
      );
      if (trimmed.length > 0) await this.park(entry, DeadLetterReason.PAYLOAD_TRIMMED, error, false);
    } catch (err) {
      this.rt.logger.warn(`Could not schedule the retry of entry ${entry.id}: ${(err as Error).message}`);
    }
  }

  /** Moves an entry to the dead-letter stream and acks it, atomically and only while owned. */
  async park(entry: HeldEntry, reason: DeadLetterReason, error?: unknown, requireOwner = true): Promise<void> {
    const dlq = this.owner.subscription.options.deadLetterStream;
    const metadata = deadLetterMetadata(
      { reason, stream: this.owner.stream, id: entry.id, group: this.owner.group, consumer: this.owner.consumer, deliveries: entry.deliveries, error },
    );
    try {
      // The script copies the payload from the stream itself, byte for byte; the fields held here
      // (decoded as UTF-8) are only the fallback for an entry trimmed away meanwhile.
      const deadLetterId = await this.rt.commands.nrsDeadLetterIfOwned(
        this.owner.stream, dlq, this.owner.group, this.owner.consumer, entry.id, requireOwner ? '1' : '0',
        String(metadata.length), ...metadata, ...escapedOriginalFields(entry.fields),
      );
      if (deadLetterId === null) return this.owner.markLost(entry.id);
      this.rt.logger.warn(
        `Entry ${entry.id} of stream "${this.owner.stream}" (group "${this.owner.group}") moved to "${dlq}" as ${deadLetterId}: ${reason}` +
          (error === undefined ? '.' : ` (${describeError(error).message})`),
      );
      this.rt.events.emit('dead-lettered', { ...this.owner.ref(entry), reason, deadLetterStream: dlq, deadLetterId, count: 1 });
    } catch (err) {
      this.rt.logger.error(
        `Could not dead-letter entry ${entry.id} of stream "${this.owner.stream}" (${(err as Error).message}); it stays pending.`,
      );
    }
  }

  /** Hands entries back: idle set to min-idle so any consumer's reclaimer takes them next round. */
  async release(ids: string[]): Promise<void> {
    try {
      const [, trimmed] = await this.rt.commands.nrsClaimIfOwned(
        this.owner.stream, this.owner.group, this.owner.consumer, this.owner.subscription.options.minIdleTimeMs, -1, ...ids,
      );
      for (const id of trimmed) {
        const entry = this.owner.held.get(id);
        if (entry) await this.park(entry, DeadLetterReason.PAYLOAD_TRIMMED, undefined, false);
      }
    } catch (err) {
      this.rt.logger.warn(`Could not hand back ${ids.length} unfinished entries: ${(err as Error).message}`);
    }
  }
}
