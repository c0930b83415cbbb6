import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

/**
 * Issue 39, nemesis seed 1002: after a takeover, a key's later entry read as new started before
 * its earlier entry taken over from the previous owner. The taken-over entry is replayed and its
 * delivery counted in Redis right before it starts (a round trip); a new entry needs no count. So
 * when both waited for a slot and two slots freed in one turn, the replayed entry took the first
 * slot and went to count its delivery, the new one took the second and reached its key's queue at
 * once, ahead of it. Here the previous owner's entries are left pending by a consumer that read
 * them and died; two of other keys fill both slots, so the key's taken-over entry and its new one
 * both wait, and the two slots are freed together.
 */
describe('exclusive ownership: a key entry taken over from the previous owner', () => {
  const { redis, closers } = testContext();

  it('starts before a later entry of its key read as new, though its delivery is counted first', async () => {
    const stream = unique('own-takeover-order');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const pendingIds: string[] = [];
    for (const [k, n] of [
      ['x', 'b1'],
      ['y', 'b2'],
      ['k', 'earlier'],
    ]) {
      pendingIds.push((await redis.xadd(stream, '*', 'k', k, 'n', n))!);
    }
    // The previous owner read them (one delivery each) and died before running any.
    await redis.xreadgroup('GROUP', 'g', 'gone', 'COUNT', 3, 'STREAMS', stream, '>');
    const laterId = (await redis.xadd(stream, '*', 'k', 'k', 'n', 'later'))!;

    const starts: string[] = [];
    let releaseBlockers!: () => void;
    const blockersReleased = new Promise<void>((resolve) => (releaseBlockers = resolve));
    @Controller()
    class Handlers {
      @EventPattern(stream, {
        group: 'g',
        partitions: 1,
        ownership: 'exclusive',
        orderingKey: 'k',
        concurrency: 2,
        prefetchCount: 8,
        maxDeliveries: 5,
      })
      async handle(@Payload() data: { k: string; n: string }) {
        starts.push(data.n);
        // Both blockers end in the same turn: the two slots free together.
        if (data.k !== 'k') await blockersReleased;
      }
    }
    const { app, server } = await startMicroservice([Handlers], { consumer: 'taker' });
    closers.push(() => app.close());
    expect(server.getOwnership()[0]?.owned).toEqual([0]);
    const [consumer] = server.getConsumers();
    await waitFor(() => starts.includes('b1') && starts.includes('b2'), 'both blockers running');
    // The taken-over entry of key k and the new one both wait for a slot.
    await waitFor(() => consumer.held.has(pendingIds[2]) && consumer.held.has(laterId), 'both entries of key k held');
    expect(starts.filter((n) => n === 'earlier' || n === 'later')).toEqual([]);
    releaseBlockers();
    await waitFor(() => starts.length === 4, 'every entry started');
    expect(starts.slice(2)).toEqual(['earlier', 'later']);
  }, 30_000);
});
