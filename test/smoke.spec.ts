import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsContext } from 'nest-redis-streams';
import { redisClient, startMicroservice, unique, waitFor, pendingCount } from './support/helpers';

describe('smoke', () => {
  it('consumes a foreign entry and acks it', async () => {
    const stream = unique('smoke');
    const seen: unknown[] = [];
    @Controller()
    class C {
      @EventPattern(stream)
      handle(@Payload() data: unknown, @Ctx() ctx: RedisStreamsContext) {
        seen.push([data, ctx.getEntryId(), ctx.getDeliveryCount()]);
      }
    }
    const redis = redisClient();
    const { app } = await startMicroservice([C], {});
    await redis.xadd(stream, '*', 'userId', '1001', 'amount', '50000');
    await waitFor(() => seen.length === 1, 'one entry');
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'ack');
    expect(seen[0]).toEqual([{ userId: '1001', amount: '50000' }, expect.any(String), 1]);
    await app.close();
    await redis.quit();
  });
});
