import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { RedisStreamsServer } from 'nest-redis-streams';
import { pendingCount, redisClient, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

// CommonJS helper shared with the scripts: a private redis-server, so that pausing it stalls no other test.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(): Promise<{ url: string; stop(): Promise<void> }>;
};

const owned = (server: RedisStreamsServer) => server.getOwnership()[0]?.owned ?? [];

/**
 * Issue 24, item 7: an owner stalled past its lease (here: Redis paused for 2.5 s against a 1 s
 * lease) while nobody took the partition over. The fence refused its acks (the lease had run out
 * by Redis' clock), and the next round renewed the same generation: the partition stayed its own,
 * but the refused acks had been reported as lost, so reclaim ran entry 1 again after 2 and 3. A
 * refused ack is kept and sent again once the lease is renewed under the same generation (nobody
 * else can have written in between). The case with a taker is test/chaos/ownership-queued.spec.ts.
 */
describe('exclusive ownership: an owner stalled past its lease, nobody taking over', () => {
  const { closers } = testContext();

  it('keeps the partition and acks what it ran: no entry runs twice, nothing reported lost', async () => {
    const stream = unique('own-stall');
    const runs: number[] = [];
    const own = await startRedis();
    closers.push(() => own.stop());
    const redis = redisClient(own.url);
    closers.push(() => redis.quit());
    const pauser = redisClient(own.url);
    closers.push(() => pauser.quit());
    let paused = false;
    @Controller()
    class Handlers {
      @EventPattern(stream, { group: 'g', partitions: 1, ownership: 'exclusive', ownershipLeaseMs: 1_000, minIdleTimeMs: 1_000 })
      async handle(@Payload() data: { n: string }) {
        runs.push(Number(data.n));
        // Right after entry 1 ran: its ack (and everything after it) reaches Redis past the lease.
        if (data.n === '1' && !paused) {
          paused = true;
          await pauser.call('CLIENT', 'PAUSE', '2500');
        }
      }
    }
    const { app, server } = await startMicroservice([Handlers], {
      connection: own.url,
      consumer: 'solo',
      reclaimIntervalMs: 100,
    });
    closers.push(() => app.close());
    const lost: string[] = [];
    server.events.on('lease-lost', (e) => lost.push(e.id));
    const revoked: string[] = [];
    server.events.on('partition-revoked', (e) => revoked.push(e.reason));
    expect(owned(server)).toEqual([0]);
    // One partition: the stream itself.
    const partition = stream;
    await redis.multi().xadd(partition, '*', 'n', '1').xadd(partition, '*', 'n', '2').xadd(partition, '*', 'n', '3').exec();
    await waitFor(() => runs.length >= 3, 'the three entries run');
    // Pending drops to 0 only once every entry was acked (on main: after reclaim ran them again).
    await waitFor(async () => (await pendingCount(redis, partition, 'g')) === 0, 'every entry acked', 10_000);
    expect(runs).toEqual([1, 2, 3]);
    expect(lost).toEqual([]);
    expect(revoked).toEqual([]);
    expect(owned(server)).toEqual([0]);
  }, 30_000);
});
