import type { RedisStreamsContext } from '../../context/redis-streams.context.js';
import { InvalidOptionsError } from '../../errors/invalid-options.error.js';
import { NonRetryableError } from '../../errors/non-retryable.error.js';
import { partitionOfKey } from '../../keys/index.js';
import { pgTextProblem } from '../pg-text.js';
import { deleteInBatches } from '../delete-in-batches.js';
import type { SqlDatabase } from '../sql-database.interface.js';

/** Most UTF-8 bytes of an inbox row's key (stream, group, handler, event id): see `record`. */
const INBOX_KEY_MAX_BYTES = 2048;

/** What the inbox reads of a delivery: `RedisStreamsContext` has it all. */
export type InboxDelivery = Pick<RedisStreamsContext, 'getStream' | 'getGroup' | 'getEventId' | 'getEntryId'>;

/** What `Inbox.run`/`runIn` did with a delivery. */
export type InboxOutcome<T> =
  /** First delivery of the event: the effect ran and its result is here. */
  | { status: 'applied'; result: T }
  /** The event's effect already committed (redelivery, reclaim, re-publish, re-drive): nothing ran. */
  | { status: 'duplicate' };

/**
 * A transactional inbox: runs a handler's database effect at most once per business event,
 * stream, group and handler (the partitions of a partitioned stream count as one stream: rows
 * are keyed on the logical stream, `orders` for `orders:{orders:3}`), in the same transaction that records the event in `nrs_inbox`.
 *
 * ```ts
 * const outcome = await inbox.run(ctx, 'payments.charge', async (tx) => {
 *   await tx.query('INSERT INTO charges (order_id, amount) VALUES ($1, $2)', [order.id, order.amount]);
 * });
 * ```
 *
 * The row is inserted first (`ON CONFLICT DO NOTHING`), so a concurrent second delivery waits on
 * the first one's key and then finds it: committed → duplicate, rolled back → it runs. A crash
 * after COMMIT and before XACK redelivers the entry; its second run is a no-op and is acked.
 */
export class Inbox<Tx> {
  constructor(private readonly db: SqlDatabase<Tx>) {}

  /** Opens a transaction, records the event and runs `effect` in it; commits both or neither. */
  run<T>(delivery: InboxDelivery, handler: string, effect: (tx: Tx) => Promise<T>): Promise<InboxOutcome<T>> {
    return this.db.transaction((tx) => this.runIn(tx, delivery, handler, effect));
  }

  /**
   * The same inside a transaction the caller holds (and commits): when it resolves `applied`, the
   * inbox row and the effect commit or roll back together with the rest of `tx`.
   */
  async runIn<T>(tx: Tx, delivery: InboxDelivery, handler: string, effect: (tx: Tx) => Promise<T>): Promise<InboxOutcome<T>> {
    if (!(await this.record(tx, delivery, handler))) return { status: 'duplicate' };
    return { status: 'applied', result: await effect(tx) };
  }

  /**
   * Records the event in `tx`: true the first time, false when its row exists (or is being
   * written by a transaction that then commits). For handlers that write the effect themselves.
   */
  async record(tx: Tx, delivery: InboxDelivery, handler: string): Promise<boolean> {
    if (typeof handler !== 'string' || handler.length === 0) {
      throw new InvalidOptionsError(
        `Inbox handler name ${JSON.stringify(handler)} is not a non-empty string: name the effect (e.g. 'payments.charge') and keep the name across deploys.`,
      );
    }
    const stream = delivery.getStream();
    const eventId = inboxEventId(delivery);
    const problem = pgTextProblem(eventId);
    if (problem) {
      // Checked before any statement, so the handler's transaction is not aborted; no retry can
      // store it, so the entry is dead-lettered at once with this reason.
      throw new NonRetryableError(
        `The event id ${JSON.stringify(eventId)} of entry ${delivery.getEntryId()} in stream "${stream}" ${problem}, so the inbox cannot record it: the producer must send ids of plain UTF-8 text.`,
      );
    }
    // Partitions of one logical stream share one identity: an event re-published into another
    // partition (an unkeyed one before its partition followed from its event id) is the same event.
    const logical = partitionOfKey(stream)?.stream ?? stream;
    const keyBytes = [logical, delivery.getGroup(), handler, eventId].reduce((n, s) => n + Buffer.byteLength(s, 'utf8'), 0);
    if (keyBytes > INBOX_KEY_MAX_BYTES) {
      // PostgreSQL's btree caps an index entry at about 2,700 bytes: the INSERT would fail and abort tx.
      throw new NonRetryableError(
        `The event id "${eventId.slice(0, 20)}…" of entry ${delivery.getEntryId()} in stream "${stream}" makes the inbox key ${keyBytes} bytes long, over ${INBOX_KEY_MAX_BYTES} (stream, group, handler and event id together), which PostgreSQL cannot index: the producer must send shorter ids (Outbox.add takes at most 1,024 bytes).`,
      );
    }
    const params = [logical, delivery.getGroup(), handler, eventId, delivery.getEntryId()];
    const rows = await this.db.executor(tx).query(
      logical === stream
        ? 'INSERT INTO nrs_inbox (stream, group_name, handler, event_id, entry_id) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING 1 AS inserted'
        : // Rows written before partitions shared a key are under the partition's own key; they are
          // never written again, so checking them without a lock is safe.
          `INSERT INTO nrs_inbox (stream, group_name, handler, event_id, entry_id)
             SELECT $1, $2, $3, $4, $5 WHERE NOT EXISTS
               (SELECT 1 FROM nrs_inbox WHERE stream = $6 AND group_name = $2 AND handler = $3 AND event_id = $4)
             ON CONFLICT DO NOTHING RETURNING 1 AS inserted`,
      logical === stream ? params : [...params, stream],
    );
    return rows.length === 1;
  }

  /**
   * Deletes inbox rows processed before `olderThan`, `batchSize` rows per statement (short locks),
   * and resolves with how many went. Keep rows longer than any copy of an event can still arrive:
   * the stream's retention, the longest a dead letter waits for a re-drive, producers' retries.
   * A copy that arrives after its row was deleted runs again.
   */
  async deleteProcessedBefore(olderThan: Date, { batchSize = 10_000 }: { batchSize?: number } = {}): Promise<number> {
    return deleteInBatches(this.db, 'nrs_inbox', 'processed_at', olderThan, batchSize);
  }
}

/** The event id the inbox keys on: the business event id, or `entry:<entry id>` for entries without one. */
export function inboxEventId(delivery: Pick<InboxDelivery, 'getEventId' | 'getEntryId'>): string {
  return delivery.getEventId() ?? `entry:${delivery.getEntryId()}`;
}
