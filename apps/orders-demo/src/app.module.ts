import { type DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import {
  IDEMPOTENCY_STORE,
  RedisIdempotencyStore,
  RedisStreamsHealthIndicator,
  RedisStreamsModule,
  RedisStreamsServer,
} from 'nest-redis-streams';
import { InventoryHandler } from './inventory/inventory.handler.js';
import { NotificationsHandler } from './notifications/notifications.handler.js';
import { OrdersLedger } from './orders/orders-ledger.service.js';
import { OrdersController } from './orders/orders.controller.js';
import { PaymentsHandler } from './payments/payments.handler.js';
import { HealthController } from './ops/health.controller.js';
import { OpsController } from './ops/ops.controller.js';
import { TRANSPORT } from './ops/transport.token.js';

/**
 * The e-commerce demo: an HTTP API that publishes orders, and payment, inventory and
 * notification handlers that each consume the `orders` stream in their own consumer group.
 */
@Module({})
export class AppModule {
  static register(server: RedisStreamsServer, redisUrl: string): DynamicModule {
    return {
      module: AppModule,
      imports: [RedisStreamsModule.forRoot({ connection: redisUrl, retention: { maxLen: 100_000, safe: true } }), TerminusModule],
      controllers: [OrdersController, PaymentsHandler, InventoryHandler, NotificationsHandler, HealthController, OpsController],
      providers: [
        OrdersLedger,
        RedisStreamsHealthIndicator,
        { provide: TRANSPORT, useValue: server },
        {
          provide: IDEMPOTENCY_STORE,
          useFactory: () => new RedisIdempotencyStore(new Redis(redisUrl), 'orders-demo:idem:'),
        },
      ],
    };
  }
}
