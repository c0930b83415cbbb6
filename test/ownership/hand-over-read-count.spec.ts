import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { type RedisStreamsContext, type RedisStreamsServer, partitionStream } from 'nest-redis-streams';
import type { ScriptedRedis } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { pendingCount, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

type Run = { consumer: string; n: number; deliveries: number };

const owned = (server: RedisStreamsServer) => server.getOwnership()[0]?.owned ?? [];

/**
 * Issue 39, nemesis seed 1002 (an entry's first run at delivery 2): a fenced read answered after
 * a cooperative hand-over began brought an entry with its delivery counted; the reply was dropped
 * (rightly: the new owner runs it in order), but the count stayed, and the new owner's takeover
 * (which counts nothing) ran it on its second delivery. The interleave is forced: the reply of one
 * fenced read is held back in this process until the hand-over has begun (the consumer's epoch
 * moved on), as a busy machine does at start-up, when instances join and partitions move.
 */
describe('exclusive ownership: a read answered during a hand-over', () => {
  const { redis, closers } = testContext();

  it('gives its entries their delivery back before the release: the next owner runs them on delivery 1', async () => {
    const stream = unique('own-hand-over-count');
    const runs: Run[] = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { group: 'g', partitions: 2, ownership: 'exclusive', ownershipLeaseMs: 600, minIdleTimeMs: 1_000 })
      handle(@Payload() data: { n: string }, @Ctx() ctx: RedisStreamsContext) {
        runs.push({ consumer: ctx.getConsumer(), n: Number(data.n), deliveries: ctx.getDeliveryCount() });
      }
    }
    const a = await startMicroservice([Handlers], { consumer: 'a' });
    closers.push(() => a.app.close());
    expect(owned(a.server)).toEqual([0, 1]);
    // Partition 1 is the one a gives up when b joins (a keeps the lower index of its share).
    const moving = partitionStream(stream, 1);
    const consumer = a.server.getConsumers().find((c) => c.stream === moving)!;
    const commands = a.server.unwrap<ScriptedRedis>();
    const read = commands.nrsFencedRead.bind(commands);
    let held = false;
    let replyHeld!: () => void;
    const replyIsHeld = new Promise<void>((resolve) => (replyHeld = resolve));
    commands.nrsFencedRead = async (...args: Parameters<ScriptedRedis['nrsFencedRead']>) => {
      const epoch = consumer.ownership.epoch;
      const reply = await read(...args);
      if (args[0] === moving && reply !== null && reply[0].length > 0 && !held) {
        held = true;
        replyHeld();
        await waitFor(() => consumer.ownership.epoch > epoch, 'the hand-over of partition 1 begun', 20_000);
      }
      return reply;
    };
    await redis.xadd(moving, '*', 'n', '1');
    await replyIsHeld;
    const b = await startMicroservice([Handlers], { consumer: 'b' });
    closers.push(() => b.app.close());
    await waitFor(() => owned(b.server).join() === '1', 'b owns partition 1');
    await waitFor(() => runs.length > 0, 'the entry a had read run');
    await waitFor(async () => (await pendingCount(redis, moving, 'g')) === 0, "b's ack");
    expect(runs).toEqual([{ consumer: 'b', n: 1, deliveries: 1 }]);
  }, 40_000);
});
