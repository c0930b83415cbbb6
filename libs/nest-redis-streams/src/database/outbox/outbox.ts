import { randomUUID } from 'node:crypto';
import { InvalidOptionsError } from '../../errors/invalid-options.error.js';
import { deleteInBatches } from '../delete-in-batches.js';
import type { SqlDatabase } from '../sql-database.interface.js';

/** Envelope fields of an outbox event (the same as `StreamRecord`'s). */
export interface OutboxEventOptions {
  /**
   * The event's id: the outbox row's id and the published entry's `event_id`, which consumers'
   * inboxes key on. Give a stable one (`order-42-placed`) when the same business fact may be
   * added twice; one outbox row per id.
   * @default a random UUID
   */
  eventId?: string;
  /** Headers for the consumer (`ctx.getHeaders()`). */
  headers?: Record<string, string>;
  /**
   * Events with the same key are published in the order they were added (and reach the same
   * partition of a partitioned stream). Events without a key have no order among themselves.
   */
  partitionKey?: string;
}

/**
 * The producer side of exactly-once effects: `add()` writes an event into `nrs_outbox` inside
 * the business transaction, so the event exists if and only if the business change committed.
 * `OutboxRelay` publishes it to Redis afterwards.
 */
export class Outbox<Tx> {
  constructor(private readonly db: SqlDatabase<Tx>) {}

  /** Adds `payload` (JSON) for `stream` in `tx`; resolves with the event id. */
  async add(tx: Tx, stream: string, payload: unknown, options: OutboxEventOptions = {}): Promise<string> {
    const eventId = options.eventId ?? randomUUID();
    const json = validate(stream, payload, options, eventId);
    await this.db
      .executor(tx)
      .query(
        'INSERT INTO nrs_outbox (event_id, stream, payload, headers, partition_key) VALUES ($1, $2, $3::json, $4::jsonb, $5)',
        [eventId, stream, json, JSON.stringify(options.headers ?? {}), options.partitionKey ?? null],
      );
    return eventId;
  }

  /**
   * Deletes events sent before `olderThan`, `batchSize` rows per statement; resolves with how
   * many went. Unsent events are never deleted. Keep them as long as reconciliation looks back.
   */
  deleteSentBefore(olderThan: Date, { batchSize = 10_000 }: { batchSize?: number } = {}): Promise<number> {
    return deleteInBatches(this.db, 'nrs_outbox', 'sent_at', olderThan, batchSize);
  }
}

function validate(stream: string, payload: unknown, options: OutboxEventOptions, eventId: string): string {
  if (typeof stream !== 'string' || stream.length === 0) {
    throw new InvalidOptionsError(
      `Outbox stream ${JSON.stringify(stream)} is not a non-empty string: pass the stream (pattern) to publish to.`,
    );
  }
  if (typeof eventId !== 'string' || eventId.length === 0) {
    throw new InvalidOptionsError(
      `Outbox eventId ${JSON.stringify(eventId)} is not a non-empty string: pass a stable id or leave it out.`,
    );
  }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (typeof value !== 'string') {
      throw new InvalidOptionsError(
        `Outbox header "${name}" is ${typeof value}, not a string: headers travel as strings; convert it.`,
      );
    }
  }
  const json = JSON.stringify(payload);
  if (json === undefined) {
    throw new InvalidOptionsError(
      `Outbox payload for stream "${stream}" is ${typeof payload}, which JSON cannot hold: pass an object, array, string, number, boolean or null.`,
    );
  }
  return json;
}
