import { Controller, UseFilters } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsExceptionFilter } from 'nest-redis-streams';
import { ORDERS_STREAM, type Order } from '../orders/order.interface.js';
import { OrdersLedger } from '../orders/orders-ledger.service.js';

/** Sends the order confirmation, one at a time and in stream order (concurrency 1, the default). */
@Controller()
// Keeps the handler's own error class and message for logs and dead letters (see README).
@UseFilters(RedisStreamsExceptionFilter)
export class NotificationsHandler {
  constructor(private readonly ledger: OrdersLedger) {}

  @EventPattern(ORDERS_STREAM, { group: 'notifications' })
  notify(@Payload() order: Order): void {
    if (order && order.customerId) this.ledger.record('notifications', 'sent');
    else this.ledger.record('notifications', 'skipped-no-customer');
  }
}
