import { Controller, Logger, UseFilters } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { Idempotent, NonRetryableError, RedisStreamsContext, RedisStreamsExceptionFilter } from 'nest-redis-streams';
import { ORDERS_STREAM, type Order } from '../orders/order.interface.js';
import { OrdersLedger } from '../orders/orders-ledger.service.js';

/**
 * Charges each order once. Idempotent by the order's event id: a redelivery after a crash, or a
 * re-published order, does not charge twice (the seeds' double-payment incident).
 */
@Controller()
// Keeps the handler's own error class and message for logs and dead letters (see README).
@UseFilters(RedisStreamsExceptionFilter)
export class PaymentsHandler {
  private readonly logger = new Logger(PaymentsHandler.name);
  private readonly attempts = new Map<string, number>();

  constructor(private readonly ledger: OrdersLedger) {}

  @EventPattern(ORDERS_STREAM, { group: 'payments', concurrency: 8, maxDeliveries: 4, minIdleTimeMs: 5_000 })
  @Idempotent({ processingTtlMs: 5_000 })
  async charge(@Payload() order: Order, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    if (order.amount <= 0) {
      // No retry can make a negative amount valid: park it for a human at once.
      throw new NonRetryableError(`Order ${order.orderId} has a non-positive amount (${order.amount}).`);
    }
    const attempt = (this.attempts.get(order.orderId) ?? 0) + 1;
    this.attempts.set(order.orderId, attempt);
    if (attempt <= (order.flakyPayments ?? 0)) {
      throw new Error(`Payment provider timed out for order ${order.orderId} (attempt ${attempt}).`);
    }
    await new Promise((resolve) => setTimeout(resolve, 2)); // the provider's round trip
    this.ledger.record('payments', 'charged');
    if (ctx.getDeliveryCount() > 1) {
      this.ledger.record('payments', 'charged-after-retry');
      this.logger.log(`Charged order ${order.orderId} on delivery ${ctx.getDeliveryCount()}.`);
    }
  }
}
