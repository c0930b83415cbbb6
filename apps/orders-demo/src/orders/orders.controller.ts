import { BadRequestException, Body, Controller, Get, HttpCode, Inject, Post } from '@nestjs/common';
import { Outbox, type SqlDatabase } from 'nest-redis-streams/database';
import { DATABASE } from '../database/demo-database.js';
import { ORDERS_STREAM, type Order } from './order.interface.js';
import { OrdersLedger } from './orders-ledger.service.js';

/**
 * The HTTP side of the hybrid app: stores each order and its `orders` event in one transaction
 * (the outbox); the relay publishes the event afterwards.
 */
@Controller('orders')
export class OrdersController {
  private readonly outbox: Outbox<unknown>;

  constructor(
    @Inject(DATABASE) private readonly db: SqlDatabase,
    private readonly ledger: OrdersLedger,
  ) {
    this.outbox = new Outbox(db);
  }

  /** Stores one order and its event; answers once both committed. */
  @Post()
  @HttpCode(202)
  async create(@Body() order: Order): Promise<{ orderId: string; eventId: string; stored: boolean }> {
    if (!order || typeof order.orderId !== 'string' || typeof order.amount !== 'number') {
      throw new BadRequestException('An order needs a string "orderId" and a numeric "amount".');
    }
    // The order id makes the event id: a client that retries the POST finds its order stored
    // and adds no second event.
    const eventId = `order-${order.orderId}`;
    const stored = await this.db.transaction(async (tx) => {
      const sql = this.db.executor(tx);
      const inserted = await sql.query(
        'INSERT INTO orders (id, customer_id, amount) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING RETURNING id',
        [order.orderId, String(order.customerId ?? ''), order.amount],
      );
      if (inserted.length === 0) return false;
      await this.outbox.add(tx, ORDERS_STREAM, order, { eventId, partitionKey: order.customerId });
      return true;
    });
    return { orderId: order.orderId, eventId, stored };
  }

  /** What each consumer group of this instance has processed so far. */
  @Get('ledger')
  ledgerSnapshot(): Record<string, number> {
    return this.ledger.snapshot();
  }
}
