import { Controller, UseFilters } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsExceptionFilter } from 'nest-redis-streams';
import { ORDERS_STREAM, type Order } from '../orders/order.interface.js';
import { OrdersLedger } from '../orders/orders-ledger.service.js';

/** Reserves stock for every order, in its own consumer group. */
@Controller()
// Keeps the handler's own error class and message for logs and dead letters (see README).
@UseFilters(RedisStreamsExceptionFilter)
export class InventoryHandler {
  private readonly reserved = new Map<string, number>();

  constructor(private readonly ledger: OrdersLedger) {}

  @EventPattern(ORDERS_STREAM, { group: 'inventory', concurrency: 4 })
  reserve(@Payload() order: Order): void {
    // Entries written by other producers (redis-cli) arrive as plain field maps without items.
    for (const item of Array.isArray(order.items) ? order.items : []) {
      this.reserved.set(item.sku, (this.reserved.get(item.sku) ?? 0) + item.quantity);
    }
    this.ledger.record('inventory', 'reserved');
  }
}
