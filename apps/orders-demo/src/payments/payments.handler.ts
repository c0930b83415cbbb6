import { Controller, Inject, Logger, UseFilters } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { NonRetryableError, RedisStreamsContext, RedisStreamsExceptionFilter } from 'nest-redis-streams';
import { Inbox, type SqlDatabase } from 'nest-redis-streams/database';
import { DATABASE } from '../database/demo-database.js';
import { ORDERS_STREAM, type Order } from '../orders/order.interface.js';
import { OrdersLedger } from '../orders/orders-ledger.service.js';

/**
 * Charges each order once: the charge row and the inbox row commit in one transaction, so a
 * redelivery after a crash, a reclaim or a re-published order finds the inbox row and charges
 * nothing (the seeds' double-payment incident).
 */
@Controller()
// Keeps the handler's own error class and message for logs and dead letters (see README).
@UseFilters(RedisStreamsExceptionFilter)
export class PaymentsHandler {
  private readonly logger = new Logger(PaymentsHandler.name);
  private readonly attempts = new Map<string, number>();
  private readonly inbox: Inbox<unknown>;

  constructor(
    @Inject(DATABASE) private readonly db: SqlDatabase,
    private readonly ledger: OrdersLedger,
  ) {
    this.inbox = new Inbox(db);
  }

  @EventPattern(ORDERS_STREAM, { group: 'payments', concurrency: 8, maxDeliveries: 4, minIdleTimeMs: 5_000 })
  async charge(@Payload() order: Order, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    // Entries written by other producers (redis-cli) arrive as plain field maps of strings.
    const amount = Number(order.amount);
    const orderId = order.orderId ?? `entry:${ctx.getEntryId()}`;
    if (!(amount > 0)) {
      // No retry can make a non-positive amount valid: park it for a human at once.
      throw new NonRetryableError(`Order ${orderId} has a non-positive amount (${order.amount}).`);
    }
    const outcome = await this.inbox.run(ctx, 'payments.charge', async (tx) => {
      const attempt = (this.attempts.get(orderId) ?? 0) + 1;
      this.attempts.set(orderId, attempt);
      if (attempt <= (order.flakyPayments ?? 0)) {
        // Thrown inside the transaction: the inbox row rolls back with it, so the retry charges.
        throw new Error(`Payment provider timed out for order ${orderId} (attempt ${attempt}).`);
      }
      await this.db
        .executor(tx)
        .query('INSERT INTO charges (order_id, event_id, amount) VALUES ($1, $2, $3)', [
          orderId,
          ctx.getEventId() ?? null,
          amount,
        ]);
    });
    if (outcome.status === 'duplicate') {
      await this.db.transaction((tx) =>
        this.db
          .executor(tx)
          .query('INSERT INTO duplicates_prevented (event_id, entry_id) VALUES ($1, $2)', [
            ctx.getEventId() ?? '',
            ctx.getEntryId(),
          ]),
      );
      this.logger.log(
        `Order ${orderId} arrived again (entry ${ctx.getEntryId()}); the inbox says it is charged: acked, not charged.`,
      );
      return;
    }
    this.ledger.record('payments', 'charged');
    if (ctx.getDeliveryCount() > 1) {
      this.ledger.record('payments', 'charged-after-retry');
      this.logger.log(`Charged order ${orderId} on delivery ${ctx.getDeliveryCount()}.`);
    }
  }
}
