import { Controller, Get, Inject } from '@nestjs/common';
import { DeadLetterService } from 'nest-redis-streams';
import { reconcile, type ReconcileReport, type SqlDatabase } from 'nest-redis-streams/database';
import { DATABASE } from '../database/demo-database.js';
import { DEAD_LETTERS } from '../payments/dead-letters.token.js';
import { ORDERS_STREAM } from './order.interface.js';

/** The demo's figures, read from the database rather than from the handlers' memory. */
@Controller('orders')
export class SummaryController {
  constructor(
    @Inject(DATABASE) private readonly db: SqlDatabase,
    @Inject(DEAD_LETTERS) private readonly deadLetters: DeadLetterService,
  ) {}

  /** Orders stored, events still waiting in the outbox, charges, and copies the inbox absorbed. */
  @Get('summary')
  summary(): Promise<Record<string, number>> {
    return this.db.transaction(async (tx) => {
      const [row] = await this.db.executor(tx).query<Record<string, number>>(`SELECT
        (SELECT count(*)::int FROM orders) AS orders,
        (SELECT count(*)::int FROM nrs_outbox WHERE sent_at IS NULL) AS "outboxUnsent",
        (SELECT count(*)::int FROM charges) AS charges,
        (SELECT count(DISTINCT order_id)::int FROM charges) AS "chargedOrders",
        (SELECT count(*)::int FROM duplicates_prevented) AS "duplicatesPrevented"`);
      return row;
    });
  }

  /**
   * Every order event of the last day against the charges table, by event id: exactly one charge
   * each, or a dead letter. Pending = 0 alone would not show a charge lost or applied twice.
   */
  @Get('reconcile')
  reconcile(): Promise<ReconcileReport> {
    return reconcile(this.db, {
      from: new Date(Date.now() - 24 * 3600_000),
      to: new Date(Date.now() + 1_000),
      source: { outboxStream: ORDERS_STREAM },
      target: { query: 'SELECT event_id FROM charges WHERE event_id = ANY($1)', group: 'payments' },
      deadLetters: { service: this.deadLetters, stream: `${ORDERS_STREAM}:dlq` },
    });
  }
}
