import { BadRequestException, Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { lastValueFrom } from 'rxjs';
import { InjectRedisStreamsClient, RedisStreamsClient, StreamRecord } from 'nest-redis-streams';
import { ORDERS_STREAM, type Order } from './order.interface.js';
import { OrdersLedger } from './orders-ledger.service.js';

/** The HTTP side of the hybrid app: accepts orders and publishes them to the `orders` stream. */
@Controller('orders')
export class OrdersController {
  constructor(
    @InjectRedisStreamsClient() private readonly client: RedisStreamsClient,
    private readonly ledger: OrdersLedger,
  ) {}

  /** Publishes one order; answers once Redis has stored it, with the entry id. */
  @Post()
  @HttpCode(202)
  async create(@Body() order: Order): Promise<{ orderId: string; entryId: string }> {
    if (!order || typeof order.orderId !== 'string' || typeof order.amount !== 'number') {
      throw new BadRequestException('An order needs a string "orderId" and a numeric "amount".');
    }
    // The order id is the business event id: a client that retries the POST re-publishes the
    // same event, and the idempotent payment handler charges it once.
    const record = new StreamRecord(order, { eventId: `order-${order.orderId}` });
    const entryId = await lastValueFrom(this.client.emit<string>(ORDERS_STREAM, record));
    return { orderId: order.orderId, entryId };
  }

  /** What each consumer group of this instance has processed so far. */
  @Get('ledger')
  ledgerSnapshot(): Record<string, number> {
    return this.ledger.snapshot();
  }
}
