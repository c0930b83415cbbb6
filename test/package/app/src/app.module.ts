import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RedisStreamsHealthIndicator, RedisStreamsServer } from 'nest-redis-streams';
import { HealthController } from './health.controller.js';
import { OrdersHandler } from './orders.handler.js';

@Module({
  imports: [TerminusModule],
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
