import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { type RedisStreamsContext, type RedisStreamsServer, partitionStream } from 'nest-redis-streams';
import type { ScriptedRedis } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { pendingCount, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

type Run = { consumer: string; n: number };

const owned = (server: RedisStreamsServer) => server.getOwnership()[0]?.owned ?? [];

/**
 * Issue 24, item 8: a fenced read whose reply came back after handOver() put its entries into the
 * consumer's memory; granted the partition again, the instance started them at once, before its
 * takeover of the PEL, although the instance that owned the partition meanwhile had run them. The
 * interleave is forced: the reply of one fenced read (its entry already in the PEL) is held back
 * in this process until the partition went to the other instance and came back.
 */
describe('exclusive ownership: a read answered after a hand-over', () => {
  const { redis, closers } = testContext();

  it('is dropped (its entries stay pending for the owner), never started when the partition comes back', async () => {
    const stream = unique('own-stale-read');
    const runs: Run[] = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, { group: 'g', partitions: 2, ownership: 'exclusive', ownershipLeaseMs: 600, minIdleTimeMs: 1_000 })
      handle(@Payload() data: { n: string }, @Ctx() ctx: RedisStreamsContext) {
        runs.push({ consumer: ctx.getConsumer(), n: Number(data.n) });
      }
    }
    const a = await startMicroservice([Handlers], { consumer: 'a' });
    closers.push(() => a.app.close());
    expect(owned(a.server)).toEqual([0, 1]);
    // Partition 1 is the one a gives up when b joins (a keeps the lower index of its share).
    const moving = partitionStream(stream, 1);
    const commands = a.server.unwrap<ScriptedRedis>();
    const read = commands.nrsFencedRead.bind(commands);
    let held: Promise<void> | null = null;
    let releaseReply!: () => void;
    let replyHeld!: () => void;
    const replyIsHeld = new Promise<void>((resolve) => (replyHeld = resolve));
    commands.nrsFencedRead = async (...args: Parameters<ScriptedRedis['nrsFencedRead']>) => {
      const reply = await read(...args);
      if (args[0] === moving && reply !== null && reply[0].length > 0 && held === null) {
        held = new Promise<void>((resolve) => (releaseReply = resolve));
        replyHeld();
        await held;
      }
      return reply;
    };
    await redis.xadd(moving, '*', 'n', '1');
    await replyIsHeld;
    const b = await startMicroservice([Handlers], { consumer: 'b' });
    closers.push(() => b.app.close());
    await waitFor(() => owned(b.server).join() === '1', 'b owns partition 1');
    await waitFor(() => runs.some((r) => r.consumer === 'b' && r.n === 1), 'b ran the entry a had read');
    await waitFor(async () => (await pendingCount(redis, moving, 'g')) === 0, "b's ack");
    await b.app.close();
    await waitFor(() => owned(a.server).join() === '0,1', 'a owns partition 1 again');
    releaseReply();
    // The read loop handles the late reply before it reads anything else of the partition.
    await redis.xadd(moving, '*', 'n', '2');
    await waitFor(() => runs.some((r) => r.n === 2), 'the entry written afterwards handled');
    expect(runs).toEqual([
      { consumer: 'b', n: 1 },
      { consumer: 'a', n: 2 },
    ]);
    await waitFor(async () => (await pendingCount(redis, moving, 'g')) === 0, 'nothing pending');
  }, 30_000);
});
