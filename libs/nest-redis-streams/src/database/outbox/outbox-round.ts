import type { SqlExecutor } from '../sql-database.interface.js';

/** An outbox row as the relay reads it. */
export interface OutboxRow {
  seq: string;
  event_id: string;
  stream: string;
  payload: unknown;
  headers: Record<string, string>;
  partition_key: string | null;
  attempts: number;
  created_at: Date;
}

/**
 * Locks the next due unsent rows, skipping rows other relays hold (several replicas each take
 * their own batch). A key whose earliest unsent event is waiting for a retry or is parked holds
 * back only its own later rows: they are left out here, so however many of them there are they
 * never fill the batch and starve other keys (rows that ever failed are few, hence the CTE over
 * `nrs_outbox_retrying`).
 */
export function lockBatch(sql: SqlExecutor, batchSize: number): Promise<OutboxRow[]> {
  return sql.query<OutboxRow>(
    `WITH held AS (
       SELECT partition_key, min(seq) AS seq FROM nrs_outbox
        WHERE sent_at IS NULL AND attempts > 0 AND partition_key IS NOT NULL
          AND (parked_at IS NOT NULL OR next_attempt_at > now())
        GROUP BY partition_key
     )
     SELECT o.seq::text AS seq, o.event_id, o.stream, o.payload, o.headers, o.partition_key, o.attempts, o.created_at
       FROM nrs_outbox o
      WHERE o.sent_at IS NULL AND o.parked_at IS NULL AND o.next_attempt_at <= now()
        AND NOT EXISTS (SELECT 1 FROM held h WHERE h.partition_key = o.partition_key AND h.seq < o.seq)
      ORDER BY o.seq
      LIMIT $1
        FOR UPDATE OF o SKIP LOCKED`,
    [batchSize],
  );
}

/**
 * The locked rows that may be published now, as one ordered list per partition key (a row
 * without a key is a list of its own). A keyed row may go only when every earlier unsent row of
 * its key is in this batch too: an earlier one held by another relay, or waiting for its retry,
 * holds the rest of its key back, so one key is never published out of order.
 */
export async function publishableRuns(sql: SqlExecutor, rows: OutboxRow[]): Promise<{ runs: OutboxRow[][]; deferred: number }> {
  const keys = [...new Set(rows.map((r) => r.partition_key).filter((k): k is string => k !== null))];
  const unsentByKey = new Map<string, string[]>();
  if (keys.length) {
    const last = rows[rows.length - 1].seq;
    const unsent = await sql.query<{ seq: string; partition_key: string }>(
      `SELECT seq::text AS seq, partition_key FROM nrs_outbox
        WHERE sent_at IS NULL AND partition_key = ANY($1::text[]) AND seq <= $2::bigint
        ORDER BY nrs_outbox.seq`,
      [keys, last],
    );
    for (const row of unsent) unsentByKey.set(row.partition_key, [...(unsentByKey.get(row.partition_key) ?? []), row.seq]);
  }
  const held = new Map(rows.map((r) => [r.seq, r]));
  const runs: OutboxRow[][] = rows.filter((r) => r.partition_key === null).map((r) => [r]);
  let deferred = 0;
  for (const key of keys) {
    const run: OutboxRow[] = [];
    for (const seq of unsentByKey.get(key) ?? []) {
      const row = held.get(seq);
      if (!row) break;
      run.push(row);
    }
    deferred += rows.filter((r) => r.partition_key === key).length - run.length;
    if (run.length) runs.push(run);
  }
  return { runs, deferred };
}

/** Marks published rows sent, with the entry id Redis gave each. */
export async function markSent(sql: SqlExecutor, sent: Array<{ seq: string; entryId: string }>): Promise<void> {
  if (!sent.length) return;
  await sql.query(
    `UPDATE nrs_outbox AS o SET sent_at = now(), entry_id = s.entry_id
       FROM unnest($1::bigint[], $2::text[]) AS s(seq, entry_id)
      WHERE o.seq = s.seq`,
    [sent.map((s) => s.seq), sent.map((s) => s.entryId)],
  );
}

/** Schedules a failed row's next attempt `delayMs` from now and keeps the error for operators. */
export async function markFailed(sql: SqlExecutor, seq: string, delayMs: number, error: string): Promise<void> {
  await sql.query(
    `UPDATE nrs_outbox SET attempts = attempts + 1, next_attempt_at = now() + $2::int * interval '1 millisecond', last_error = $3
      WHERE seq = $1::bigint`,
    [seq, delayMs, error.slice(0, 2000)],
  );
}

/**
 * Parks a row whose publish failed for good (see `isPermanentPublishError`): the relay leaves it,
 * and the later rows of its key, until an operator re-publishes or discards it.
 */
export async function markParked(sql: SqlExecutor, seq: string, error: string): Promise<void> {
  await sql.query(`UPDATE nrs_outbox SET attempts = attempts + 1, parked_at = now(), last_error = $2 WHERE seq = $1::bigint`, [
    seq,
    error.slice(0, 2000),
  ]);
}

/** What the outbox table holds that is not published yet, for metrics and health. */
export interface OutboxBacklog {
  /** Unsent events the relay will publish (parked ones not counted). */
  backlog: number;
  /** Age of the oldest of those (0 when none waits). */
  oldestAgeMs: number;
  /** Parked events: they wait for an operator (`outbox.republishParked` / `discardParked`). */
  parked: number;
  /** Parked events per stream (the pattern given to `outbox.add`). */
  parkedByStream: Array<{ stream: string; parked: number }>;
}

/** Unsent events, the age of the oldest, and the parked ones, for metrics and health. */
export async function readBacklog(sql: SqlExecutor): Promise<OutboxBacklog> {
  const [row] = await sql.query<{ backlog: number; oldest_age_ms: number | null }>(
    `SELECT count(*)::int AS backlog,
            (extract(epoch FROM now() - min(created_at)) * 1000)::float8 AS oldest_age_ms
       FROM nrs_outbox WHERE sent_at IS NULL AND parked_at IS NULL`,
  );
  const parkedByStream = await sql.query<{ stream: string; parked: number }>(
    `SELECT stream, count(*)::int AS parked FROM nrs_outbox
      WHERE parked_at IS NOT NULL AND sent_at IS NULL GROUP BY stream ORDER BY stream`,
  );
  return {
    backlog: row.backlog,
    oldestAgeMs: Math.max(0, row.oldest_age_ms ?? 0),
    parked: parkedByStream.reduce((sum, s) => sum + s.parked, 0),
    parkedByStream,
  };
}
