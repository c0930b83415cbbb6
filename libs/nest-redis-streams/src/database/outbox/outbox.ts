import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { deleteInBatches } from '../delete-in-batches.js';
import type { SqlDatabase } from '../sql-database.interface.js';
import { DuplicateOutboxEventError } from './errors/duplicate-outbox-event.error.js';
import { outboxEncoder, type OutboxPublishLimits, validateOutboxEvent } from './outbox-validation.js';
import { discardParked, type ListParkedOptions, listParked, type ParkedOutboxEvent, republishParked } from './parked-events.js';

export type { ListParkedOptions, ParkedOutboxEvent } from './parked-events.js';
export type { OutboxPublishLimits } from './outbox-validation.js';

/** Envelope fields of an outbox event (the same as `StreamRecord`'s). */
export interface OutboxEventOptions {
  /**
   * The event's id: the outbox row's id and the published entry's `event_id`, which consumers'
   * inboxes key on. Give a stable one (`order-42-placed`) when the same business fact may be
   * added twice; one outbox row per id (a second `add` fails with DuplicateOutboxEventError).
   * @default a random UUID
   */
  eventId?: string;
  /** Headers for the consumer (`ctx.getHeaders()`). */
  headers?: Record<string, string>;
  /**
   * Events with the same key are published in the order they were added (and reach the same
   * partition of a partitioned stream). Events without a key have no order among themselves; on
   * a partitioned stream their partition follows from the event id.
   */
  partitionKey?: string;
}

/** Options of `Outbox`. */
export interface OutboxOptions {
  /**
   * The client the relay publishes through (a `RedisStreamsClient`): `add()` refuses, inside the
   * caller's transaction, an event that client would refuse (over its `maxPayloadBytes`, not
   * serializable by its serializer).
   * @default the client defaults (1 MiB, JSON)
   */
  client?: OutboxPublishLimits;
}

/**
 * The producer side of exactly-once effects: `add()` writes an event into `nrs_outbox` inside
 * the business transaction, so the event exists if and only if the business change committed.
 * `OutboxRelay` publishes it to Redis afterwards. Events it can never publish are parked:
 * `listParked()`, then `republishParked()` once the cause is fixed, or `discardParked()`.
 */
export class Outbox<Tx> {
  private readonly logger = new Logger(Outbox.name);
  private readonly encoder;

  constructor(
    private readonly db: SqlDatabase<Tx>,
    options: OutboxOptions = {},
  ) {
    this.encoder = outboxEncoder(options.client);
  }

  /**
   * Adds `payload` (JSON) for `stream` in `tx`; resolves with the event id. Every check runs
   * before any statement, so a refused event leaves `tx` usable.
   * @throws InvalidOptionsError for a bad stream, eventId, partitionKey or header (named, with the fix);
   *   OutboxEventRefusedError for what the relay's client would refuse; DuplicateOutboxEventError
   *   when the eventId is in the outbox already.
   */
  async add(tx: Tx, stream: string, payload: unknown, options: OutboxEventOptions = {}): Promise<string> {
    const eventId = options.eventId ?? randomUUID();
    const json = validateOutboxEvent(this.encoder, stream, payload, { ...options, eventId });
    // DO NOTHING rather than a unique violation, which would abort the caller's whole transaction.
    const inserted = await this.db
      .executor(tx)
      .query(
        'INSERT INTO nrs_outbox (event_id, stream, payload, headers, partition_key) VALUES ($1, $2, $3::json, $4::jsonb, $5) ON CONFLICT (event_id) DO NOTHING RETURNING 1 AS inserted',
        [eventId, stream, json, JSON.stringify(options.headers ?? {}), options.partitionKey ?? null],
      );
    if (inserted.length === 0) {
      throw new DuplicateOutboxEventError(
        `Outbox eventId "${eventId}" is in the outbox already (one row per event id): nothing was added and the transaction is still usable. Catch DuplicateOutboxEventError when the same business fact may be added twice, or give each event its own id.`,
        eventId,
      );
    }
    return eventId;
  }

  /** Parked events (see `OutboxRelay`), oldest first, with how many events of each one's key wait. */
  listParked(options: ListParkedOptions = {}): Promise<ParkedOutboxEvent[]> {
    return this.db.transaction((tx) => listParked(this.db.executor(tx), options));
  }

  /** Makes parked events due again (fix the cause first); resolves with the ids that were parked. */
  async republishParked(eventIds: readonly string[]): Promise<string[]> {
    const ids = await this.db.transaction((tx) => republishParked(this.db.executor(tx), eventIds));
    if (ids.length) this.logger.log(`Re-publishing ${ids.length} parked outbox event(s): ${ids.join(', ')}.`);
    return ids;
  }

  /** Deletes parked events for good, releasing their keys; resolves with the ids deleted. */
  async discardParked(eventIds: readonly string[]): Promise<string[]> {
    const ids = await this.db.transaction((tx) => discardParked(this.db.executor(tx), eventIds));
    if (ids.length) this.logger.warn(`Discarded ${ids.length} parked outbox event(s) for good: ${ids.join(', ')}.`);
    return ids;
  }

  /**
   * Deletes events sent before `olderThan`, `batchSize` rows per statement; resolves with how
   * many went. Unsent events are never deleted. Keep them as long as reconciliation looks back.
   */
  deleteSentBefore(olderThan: Date, { batchSize = 10_000 }: { batchSize?: number } = {}): Promise<number> {
    return deleteInBatches(this.db, 'nrs_outbox', 'sent_at', olderThan, batchSize);
  }
}
