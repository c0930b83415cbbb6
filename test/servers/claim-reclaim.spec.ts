import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import type { RedisStreamsContext } from 'nest-redis-streams';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';
import { claimEpochKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { capabilitiesOf } from './capabilities-of.js';

jest.setTimeout(60_000);

// Where every node has XREADGROUP CLAIM the read loop takes over a dead consumer's entries itself,
// as soon as they are claimable, without waiting for a reclaim round; elsewhere the XAUTOCLAIM
// round does. Either way: counted once per delivery, and over the budget an entry is parked unrun.
describe('reclaiming through the read (XREADGROUP CLAIM where present)', () => {
  const { redis, closers } = testContext();
  const has = capabilitiesOf(redis);

  async function deadConsumerEntries(stream: string, deliveries: number): Promise<string[]> {
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    const ids = [(await redis.xadd(stream, '*', 'n', '1'))!, (await redis.xadd(stream, '*', 'n', '2'))!];
    await redis.xreadgroup('GROUP', 'nest', 'dead', 'COUNT', 2, 'STREAMS', stream, '>');
    // Earlier deliveries of the same entries (a consumer that crashed on them before).
    if (deliveries > 1) await redis.xclaim(stream, 'nest', 'dead', 0, ...ids, 'RETRYCOUNT', deliveries, 'JUSTID');
    return ids;
  }

  function recorder(stream: string, seen: Array<[string, number, string]>) {
    @Controller()
    class Recorder {
      @EventPattern(stream, { maxDeliveries: 3 })
      handle(@Ctx() ctx: RedisStreamsContext) {
        seen.push([ctx.getEntryId(), ctx.getDeliveryCount(), ctx.getConsumer()]);
      }
    }
    return Recorder;
  }

  it('takes the entries over with the delivery counted once (2), by the read alone where CLAIM exists', async () => {
    const stream = unique('claim-reclaim');
    const ids = await deadConsumerEntries(stream, 1);
    const seen: Array<[string, number, string]> = [];
    const reclaimed: number[] = [];
    // A reclaim round only every minute: within this test only a CLAIM read can take them over.
    const { app, server } = await startMicroservice([recorder(stream, seen)], {
      consumer: 'survivor',
      minIdleTimeMs: 300,
      reclaimIntervalMs: 60_000,
    });
    closers.push(() => app.close());
    server.events.on('reclaimed', (e) => reclaimed.push(e.count));
    if (!has().claim) await waitFor(async () => (await server.reclaimNow()) === 2, 'a reclaim round to take both');
    await waitFor(() => seen.length === 2, 'both entries handled');
    expect(seen).toEqual([
      [ids[0], 2, 'survivor'],
      [ids[1], 2, 'survivor'],
    ]);
    expect(reclaimed.reduce((a, b) => a + b, 0)).toBe(2);
    await waitFor(async () => ((await redis.xpending(stream, 'nest')) as [number])[0] === 0, 'the acks');
  });

  it('parks entries already delivered maxDeliveries times without running them (the reported count is before this delivery)', async () => {
    const stream = unique('claim-budget');
    const ids = await deadConsumerEntries(stream, 3);
    const seen: Array<[string, number, string]> = [];
    const parked: Array<[string, number]> = [];
    const { app, server } = await startMicroservice([recorder(stream, seen)], {
      consumer: 'survivor',
      minIdleTimeMs: 300,
      reclaimIntervalMs: 60_000,
    });
    closers.push(() => app.close());
    server.events.on('dead-lettered', (e) => parked.push([e.id, e.deliveries]));
    if (!has().claim) await waitFor(async () => (await server.reclaimNow()) === 2, 'a reclaim round to take both');
    await waitFor(() => parked.length === 2, 'both entries parked');
    expect(parked).toEqual([
      [ids[0], 4],
      [ids[1], 4],
    ]);
    expect(seen).toEqual([]);
  });

  it('claimReads: false leaves idle entries to the reclaim round', async () => {
    const stream = unique('claim-off');
    const ids = await deadConsumerEntries(stream, 1);
    const seen: Array<[string, number, string]> = [];
    const { app, server } = await startMicroservice([recorder(stream, seen)], {
      consumer: 'survivor',
      minIdleTimeMs: 300,
      reclaimIntervalMs: 60_000,
      claimReads: false,
    });
    closers.push(() => app.close());
    // No read takes them over on any server: only this round can, once they are idle enough.
    await waitFor(async () => (await server.reclaimNow()) === 2, 'a reclaim round to take both');
    await waitFor(() => seen.length === 2, 'both entries handled');
    expect(seen).toEqual([
      [ids[0], 2, 'survivor'],
      [ids[1], 2, 'survivor'],
    ]);
    await waitFor(async () => ((await redis.xpending(stream, 'nest')) as [number])[0] === 0, 'the acks');
  });

  it('CLAIM reads (the default) never mark the group, and its acks stay on the plain XACK path', async () => {
    const stream = unique('claim-on');
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    let release: () => void = () => undefined;
    const seen: string[] = [];
    @Controller()
    class Holder {
      @EventPattern(stream)
      async handle(@Ctx() ctx: RedisStreamsContext) {
        seen.push(ctx.getEntryId());
        if (seen.length === 3) await new Promise<void>((resolve) => (release = resolve));
      }
    }
    // No lease renewal or reclaim round within the test: nothing but the ack touches the entry.
    const { app, server } = await startMicroservice([Holder], {
      consumer: 'reader',
      minIdleTimeMs: 60_000,
      reclaimIntervalMs: 60_000,
    });
    closers.push(() => app.close());
    let acked = 0;
    server.events.on('acked', ({ count }) => (acked += count));
    // Two entries first: on servers without CLAIM a read is stamped only after an ack's answer.
    for (const n of ['1', '2']) {
      await redis.xadd(stream, '*', 'n', n);
      await waitFor(() => acked === Number(n), `ack ${n}`);
    }
    const id = (await redis.xadd(stream, '*', 'n', '3'))!;
    await waitFor(() => seen.length === 3, 'the third entry running');
    // A raw XCLAIM raises no epoch (the documented hazard): only the plain path acks it anyway.
    await redis.xclaim(stream, 'nest', 'elsewhere', 0, id, 'JUSTID');
    release();
    await waitFor(() => acked === 3, 'the third ack');
    expect(await redis.xpending(stream, 'nest')).toEqual([0, null, null, null]);
    expect(await redis.hget(claimEpochKey(stream, 'nest'), 'claim-reads')).toBeNull();
  });
});
