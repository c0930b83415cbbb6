import { type DynamicModule, Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Redis } from 'ioredis';
import {
  DeadLetterService,
  IDEMPOTENCY_STORE,
  RedisIdempotencyStore,
  RedisStreamsHealthIndicator,
  RedisStreamsModule,
  RedisStreamsServer,
} from 'nest-redis-streams';
import { RedisStreamsConsoleModule } from 'nest-redis-streams/console';
import { DATABASE, DemoDatabaseCloser, type DemoDatabase } from './database/demo-database.js';
import { DemoOutboxRelay } from './database/demo-outbox-relay.js';
import { InventoryHandler } from './inventory/inventory.handler.js';
import { NotificationsHandler } from './notifications/notifications.handler.js';
import { OrdersLedger } from './orders/orders-ledger.service.js';
import { OrdersController } from './orders/orders.controller.js';
import { SummaryController } from './orders/summary.controller.js';
import { DEAD_LETTERS } from './payments/dead-letters.token.js';
import { PaymentsHandler } from './payments/payments.handler.js';
import { HealthController } from './ops/health.controller.js';
import { OpsController } from './ops/ops.controller.js';
import { TRANSPORT } from './ops/transport.token.js';

/**
 * The e-commerce demo: an HTTP API that stores orders with their events (outbox), a relay that
 * publishes them, and payment (inbox: one charge per order), inventory and notification handlers
 * that each consume the `orders` stream in their own consumer group.
 */
@Module({})
export class AppModule {
  static register(server: RedisStreamsServer, redisUrl: string, database: DemoDatabase): DynamicModule {
    return {
      module: AppModule,
      imports: [
        RedisStreamsModule.forRoot({ connection: redisUrl, retention: { maxLen: 100_000, safe: true } }),
        TerminusModule,
        // The streams console at /streams-console. The demo's guard lets every request write (and
        // records "demo" in the audit stream); a real app passes its own auth guard here.
        // CONSOLE_HISTORY_SAMPLE_MS: the charts' sampling period (the screenshots use a short one).
        RedisStreamsConsoleModule.forRoot({
          connection: redisUrl,
          streams: ['orders'],
          guard: () => 'demo',
          historySampleMs: Number(process.env.CONSOLE_HISTORY_SAMPLE_MS ?? 30_000),
        }),
      ],
      controllers: [
        OrdersController,
        SummaryController,
        PaymentsHandler,
        InventoryHandler,
        NotificationsHandler,
        HealthController,
        OpsController,
      ],
      providers: [
        OrdersLedger,
        RedisStreamsHealthIndicator,
        { provide: TRANSPORT, useValue: server },
        { provide: DATABASE, useValue: database.db },
        { provide: DemoDatabaseCloser, useValue: new DemoDatabaseCloser(database) },
        DemoOutboxRelay,
        { provide: DEAD_LETTERS, useFactory: () => new DeadLetterService(new Redis(redisUrl)) },
        {
          provide: IDEMPOTENCY_STORE,
          useFactory: () => new RedisIdempotencyStore(new Redis(redisUrl), 'orders-demo:idem:'),
        },
      ],
    };
  }
}
