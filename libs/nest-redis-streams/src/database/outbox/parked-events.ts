import { InvalidOptionsError } from '../../errors/invalid-options.error.js';
import type { SqlExecutor } from '../sql-database.interface.js';

/** An outbox event the relay parked because its publish can never succeed as it is. */
export interface ParkedOutboxEvent {
  eventId: string;
  /** The stream (pattern) it is for. */
  stream: string;
  partitionKey: string | null;
  /** Publishes tried, the one that parked it included. */
  attempts: number;
  /** Why: the publish error (`PayloadTooLargeError: ...`, `PublishFailedError: ... WRONGTYPE ...`). */
  lastError: string;
  createdAt: Date;
  parkedAt: Date;
  /** Later unsent events of its partition key, which wait behind it (0 without a key). */
  waiting: number;
}

/** Options of `Outbox.listParked`. */
export interface ListParkedOptions {
  /** Only events for this stream (pattern). */
  stream?: string;
  /**
   * Most events returned, oldest first.
   * @default 100
   */
  limit?: number;
}

/** Parked events, oldest first, each with how many events of its key wait behind it. */
export function listParked(sql: SqlExecutor, { stream, limit = 100 }: ListParkedOptions = {}): Promise<ParkedOutboxEvent[]> {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new InvalidOptionsError(`listParked limit ${limit} is not a positive integer: pass e.g. { limit: 100 }.`);
  }
  return sql.query<ParkedOutboxEvent>(
    `SELECT p.event_id AS "eventId", p.stream, p.partition_key AS "partitionKey", p.attempts, p.last_error AS "lastError",
            p.created_at AS "createdAt", p.parked_at AS "parkedAt",
            (SELECT count(*)::int FROM nrs_outbox w
              WHERE w.partition_key = p.partition_key AND w.sent_at IS NULL AND w.seq > p.seq) AS waiting
       FROM nrs_outbox p
      WHERE p.parked_at IS NOT NULL AND p.sent_at IS NULL AND ($1::text IS NULL OR p.stream = $1)
      ORDER BY p.seq
      LIMIT $2`,
    [stream ?? null, limit],
  );
}

function checkIds(eventIds: readonly string[], method: string): void {
  if (!Array.isArray(eventIds) || eventIds.some((id) => typeof id !== 'string')) {
    throw new InvalidOptionsError(
      `${method} takes an array of event ids (see outbox.listParked()), got ${JSON.stringify(eventIds)}.`,
    );
  }
}

/**
 * Makes parked events due again (their attempts start over; `last_error` stays until a publish
 * succeeds); resolves with the ids that were parked. Ids that are not parked are left alone.
 */
export async function republishParked(sql: SqlExecutor, eventIds: readonly string[]): Promise<string[]> {
  checkIds(eventIds, 'republishParked');
  const rows = await sql.query<{ event_id: string }>(
    `UPDATE nrs_outbox SET parked_at = NULL, attempts = 0, next_attempt_at = now()
      WHERE event_id = ANY($1::text[]) AND parked_at IS NOT NULL AND sent_at IS NULL
      RETURNING event_id`,
    [eventIds],
  );
  return rows.map((r) => r.event_id);
}

/**
 * Deletes parked events for good (the later events of their keys go on); resolves with the ids
 * deleted. Ids that are not parked are left alone. Reconciliation no longer expects them.
 */
export async function discardParked(sql: SqlExecutor, eventIds: readonly string[]): Promise<string[]> {
  checkIds(eventIds, 'discardParked');
  const rows = await sql.query<{ event_id: string }>(
    `DELETE FROM nrs_outbox WHERE event_id = ANY($1::text[]) AND parked_at IS NOT NULL AND sent_at IS NULL RETURNING event_id`,
    [eventIds],
  );
  return rows.map((r) => r.event_id);
}
