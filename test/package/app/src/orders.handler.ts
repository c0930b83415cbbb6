// The handler as the README writes it, compiled under each fixture's strict tsconfig.
import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsContext, streamPattern } from 'nest-redis-streams';

@Controller()
export class OrdersHandler {
  static handled = 0;

  @EventPattern(streamPattern(process.env.STREAM ?? 'fixture.orders'), { group: 'billing', concurrency: 8 })
  async charge(@Payload() order: { id: string }, @Ctx() ctx: RedisStreamsContext): Promise<void> {
    if (typeof order.id !== 'string' || ctx.getEventId() === undefined) throw new Error(`unexpected entry ${ctx.getEntryId()}`);
    OrdersHandler.handled++;
  }
}
