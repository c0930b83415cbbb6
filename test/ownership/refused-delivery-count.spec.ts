import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { RedisStreamsContext } from 'nest-redis-streams';
import { pendingCount, redisClient, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

// CommonJS helper shared with the scripts: a private redis-server, so that pausing it stalls no other test.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(): Promise<{ url: string; stop(): Promise<void> }>;
};

const LEASE_MS = 1_000;

/**
 * Issue 38 follow-up: under exclusive ownership the gate refuses an entry whose lease ran out
 * before its handler was called; the entry stays pending, with the delivery its read counted,
 * and is replayed once the lease is renewed. The guide counts a delivery when its handler starts:
 * the replay must not count a second one for an entry that never ran. The stall is made by Redis
 * refusing writes (CLIENT PAUSE WRITE) while the first entry of the key runs, past the lease by
 * the local clock: its successor is refused when its turn comes, the next one waits for a slot.
 * With maxDeliveries: 1, one count too many parks an entry that never ran.
 */
describe('exclusive ownership: entries refused by the gate after their read counted a delivery', () => {
  const { closers } = testContext();

  it('are replayed on the delivery their read counted: every entry runs once, on its first delivery, none parked', async () => {
    const stream = unique('own-refused-count');
    const own = await startRedis();
    closers.push(() => own.stop());
    const redis = redisClient(own.url);
    closers.push(() => redis.quit());
    const pauser = redisClient(own.url);
    closers.push(() => pauser.quit());
    const runs: Array<[n: string, deliveries: number]> = [];
    @Controller()
    class Handlers {
      @EventPattern(stream, {
        group: 'g',
        partitions: 1,
        ownership: 'exclusive',
        ownershipLeaseMs: LEASE_MS,
        minIdleTimeMs: 1_000,
        orderingKey: 'k',
        concurrency: 2,
        maxDeliveries: 1,
      })
      async handle(@Payload() data: { n: string }, @Ctx() ctx: RedisStreamsContext) {
        runs.push([data.n, ctx.getDeliveryCount()]);
        if (data.n !== '1' || runs.length > 1) return;
        // No renewal reaches Redis from here; entry 1 ends once the lease has run out by the local
        // clock (granted or renewed by a request sent before the pause), before Redis takes writes again.
        const pausedAt = Date.now();
        await pauser.call('CLIENT', 'PAUSE', String(3 * LEASE_MS), 'WRITE');
        await waitFor(() => Date.now() - pausedAt > LEASE_MS + 300, 'the lease run out by the local clock');
      }
    }
    const { app, server } = await startMicroservice([Handlers], {
      connection: own.url,
      consumer: 'solo',
      reclaimIntervalMs: 100,
    });
    closers.push(() => app.close());
    const parked: string[] = [];
    server.events.on('dead-lettered', (e) => parked.push(`${e.id} ${e.reason} after ${e.deliveries}`));
    expect(server.getOwnership()[0]?.owned).toEqual([0]);
    // One partition: the stream itself. Entry 2 takes the other slot behind entry 1; 3 and 4 wait for one.
    const add = redis.multi();
    for (let n = 1; n <= 4; n++) add.xadd(stream, '*', 'k', 'q', 'n', String(n));
    await add.exec();
    await waitFor(() => runs.length + parked.length >= 4, 'every entry run or parked', 20_000);
    await waitFor(async () => (await pendingCount(redis, stream, 'g')) === 0, 'nothing pending', 10_000);
    expect(parked).toEqual([]);
    expect(runs).toEqual([
      ['1', 1],
      ['2', 1],
      ['3', 1],
      ['4', 1],
    ]);
    // The same instance all along, its lease renewed under the same generation.
    expect(server.getOwnership()[0]?.owned).toEqual([0]);
  }, 40_000);
});
