import { InvalidOptionsError } from '../errors/invalid-options.error.js';
import type { SqlDatabase } from './sql-database.interface.js';

/** Deletes rows of `table` whose `column` is before `olderThan`, batch by batch; the total. */
export async function deleteInBatches<Tx>(
  db: SqlDatabase<Tx>,
  table: 'nrs_inbox' | 'nrs_outbox',
  column: 'processed_at' | 'sent_at',
  olderThan: Date,
  batchSize: number,
): Promise<number> {
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new InvalidOptionsError(`batchSize ${batchSize} is not a positive integer: pass e.g. { batchSize: 10000 }.`);
  }
  let total = 0;
  for (;;) {
    const [{ deleted }] = await db.transaction((tx) =>
      db
        .executor(tx)
        .query<{ deleted: number }>(
          `WITH gone AS (DELETE FROM ${table} WHERE ctid IN (SELECT ctid FROM ${table} WHERE ${column} < $1 LIMIT $2) RETURNING 1) SELECT count(*)::int AS deleted FROM gone`,
          [olderThan, batchSize],
        ),
    );
    total += deleted;
    if (deleted < batchSize) return total;
  }
}
