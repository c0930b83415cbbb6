import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedisStreamsHealthIndicator, RedisStreamsServer } from 'nest-redis-streams';
import { RedisStreamsConsoleModule } from 'nest-redis-streams/console';
import { HealthController } from './health.controller.js';
import { OrdersHandler } from './orders.handler.js';

@Module({
  imports: [
    TerminusModule,
    // From its own entry point; read-only, so it needs no guard. The package check reads its overview.
    RedisStreamsConsoleModule.forRoot({
      connection: process.env.REDIS_URL,
      streams: [process.env.STREAM ?? 'fixture.orders'],
      readOnly: true,
    }),
  ],
  controllers: [OrdersHandler, HealthController],
  providers: [
    RedisStreamsHealthIndicator,
    {
      provide: RedisStreamsServer,
      useFactory: () => new RedisStreamsServer({ connection: process.env.REDIS_URL, consumer: 'fixture' }),
    },
  ],
})
export class AppModule {}
