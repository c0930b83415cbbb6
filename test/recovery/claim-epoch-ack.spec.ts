import { Controller, Logger } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { Redis } from 'ioredis';
import type { RedisStreamsContext, RedisStreamsServer } from 'nest-redis-streams';
import { claimEpochKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { redisClient, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

// CommonJS helper shared with the scripts: a private redis-server (its command counters are ours alone).
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(): Promise<{ url: string; stop(): Promise<void> }>;
};

type Row = [id: string, consumer: string, idle: number, deliveries: number];

/**
 * A consumer acks with one plain XACK while no claim can have happened since it read the entries
 * (the group's claim epoch is unchanged), and checks the owner otherwise (see
 * redis/lua/claim-epoch.ts). Lease renewal and the consumer's own reclaimer are off, so nothing
 * but the ack script stands between an old owner and an entry another consumer claimed.
 */
describe('acks under the claim epoch', () => {
  const { redis, closers } = testContext();
  /** Claims as another instance of the library would: through the scripts that raise the epoch. */
  const scripted = withStreamScripts(redisClient());
  afterAll(() => scripted.quit());
  const quiet = { leaseRenewal: false, reclaimIntervalMs: 0, minIdleTimeMs: 60_000 } as const;

  /** Counts `acked` events; resolves once `total` entries were acked. */
  function ackCounter(server: RedisStreamsServer) {
    let acked = 0;
    server.events.on('acked', ({ count }) => (acked += count));
    return { until: (total: number) => waitFor(() => acked >= total, `${total} acks`) };
  }

  /**
   * Two entries acked one after the other: the first ack answers with the epoch, and the read that
   * brings the second may have been sent before that answer. Reads from then on carry the epoch.
   */
  async function warmUp(client: Redis, stream: string, acks: ReturnType<typeof ackCounter>, done = 0) {
    await client.xadd(stream, '*', 'data', '{"warm":1}');
    await acks.until(done + 1);
    await client.xadd(stream, '*', 'data', '{"warm":2}');
    await acks.until(done + 2);
  }

  it('sends no XPENDING when nothing was claimed since the read (the plain XACK path)', async () => {
    const own = await startRedis();
    closers.push(() => own.stop());
    const client = new Redis(own.url, { maxRetriesPerRequest: 1 });
    closers.push(() => client.quit());
    const stream = unique('epoch-fast');
    @Controller()
    class Quick {
      @EventPattern(stream)
      handle() {}
    }
    const { app, server } = await startMicroservice([Quick], { connection: own.url, consumer: 'fast', ...quiet });
    closers.push(() => app.close());
    const acks = ackCounter(server);
    await warmUp(client, stream, acks);
    await client.config('RESETSTAT');
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 20; i++) await client.xadd(stream, '*', 'data', JSON.stringify({ round, i }));
      await acks.until(2 + (round + 1) * 20);
    }
    const stats = await client.info('commandstats');
    expect(stats).toMatch(/cmdstat_xack:calls=\d+/);
    // The owner check reads XPENDING rows; the plain path never does.
    expect(stats).not.toMatch(/cmdstat_xpending:/);
    // The plain XACK goes under WATCH of the epoch, in MULTI / EXEC, on the consumer's ack
    // connection (redis/watched-ack.ts), not through the ack script.
    expect(stats).toMatch(/cmdstat_watch:calls=\d+/);
    expect(stats).toMatch(/cmdstat_exec:calls=\d+/);
    const clients = String(await client.call('CLIENT', 'LIST'));
    expect(clients).toMatch(/name=nrs:acks:fast .*cmd=exec\b/);
    expect(Number(((await client.xpending(stream, 'nest')) as [number])[0])).toBe(0);
  }, 60_000);

  it.each(['watch', 'multi', 'exec'])(
    'acks every entry through the script, and says why once, for a user Redis refuses %s',
    async (refused) => {
      const own = await startRedis();
      closers.push(() => own.stop());
      const admin = new Redis(own.url, { maxRetriesPerRequest: 1 });
      closers.push(() => admin.quit());
      await admin.call('ACL', 'SETUSER', 'nowatch', 'on', '>pw', '~*', '&*', '+@all', `-${refused}`);
      const warn = jest.spyOn(Logger.prototype, 'warn');
      closers.push(async () => warn.mockRestore());
      const stream = unique('epoch-nowatch');
      @Controller()
      class Quick {
        @EventPattern(stream)
        handle() {}
      }
      const connection = own.url.replace('redis://', 'redis://nowatch:pw@');
      const { app, server } = await startMicroservice([Quick], { connection, consumer: 'nowatch', ...quiet });
      closers.push(() => app.close());
      const acks = ackCounter(server);
      await warmUp(admin, stream, acks);
      for (let i = 0; i < 40; i++) await admin.xadd(stream, '*', 'data', JSON.stringify({ i }));
      await acks.until(42);
      expect(Number(((await admin.xpending(stream, 'nest')) as [number])[0])).toBe(0);
      const warned = warn.mock.calls.filter(([message]) => String(message).includes('refused the cheap ack'));
      expect(warned).toEqual([[expect.stringContaining('ACL SETUSER nowatch +watch +unwatch +multi +exec')]]);
      // Without MULTI or EXEC the connection is not kept: an XACK behind a refused MULTI would run unwatched.
      const clients = String(await admin.call('CLIENT', 'LIST'));
      expect(clients.includes('name=nrs:acks:nowatch ')).toBe(refused === 'watch');
    },
    60_000,
  );

  it.each([
    [
      'another instance’s reclaimer',
      (s: string, id: string) => scripted.nrsAutoClaimCounted(s, claimEpochKey(s, 'nest'), 'nest', 'new-owner', 0, id, 10),
    ],
    [
      'an operator’s claim (console, CLI)',
      (s: string, id: string) => scripted.nrsClaimCounted(s, claimEpochKey(s, 'nest'), 'nest', 'new-owner', id),
    ],
  ])('an old owner does not ack an entry %s took after the read, though its acks went the plain way before', async (_, claim) => {
    const stream = unique('epoch-claimed');
    let release!: () => void;
    const running = new Promise<void>((resolve) => (release = resolve));
    const started: string[] = [];
    @Controller()
    class Slow {
      @EventPattern(stream)
      async handle(@Ctx() ctx: RedisStreamsContext) {
        started.push(ctx.getEntryId());
        if (started.length > 2) await running;
      }
    }
    const { app, server } = await startMicroservice([Slow], { consumer: 'old-owner', ...quiet });
    closers.push(() => app.close());
    const acks = ackCounter(server);
    const lost: string[] = [];
    server.events.on('lease-lost', ({ id }) => lost.push(id));
    await warmUp(redis, stream, acks);
    const id = (await redis.xadd(stream, '*', 'data', '{"n":1}'))!;
    await waitFor(() => started.length === 3, 'the handler to start');
    await claim(stream, id);
    release();
    await waitFor(() => lost.length > 0, 'the old owner to try its ack');
    expect(lost).toEqual([id]);
    const rows = (await redis.xpending(stream, 'nest', '-', '+', 10)) as Row[];
    expect(rows.map(([rowId, consumer]) => [rowId, consumer])).toEqual([[id, 'new-owner']]);
  });

  it.each([
    { checkEveryAck: false, after: 'acked by the old owner: what the plain path gives up' },
    { checkEveryAck: true, after: 'still the new owner’s' },
  ])('a raw XCLAIM from outside the library, checkEveryAck $checkEveryAck: $after', async ({ checkEveryAck }) => {
    // The documented limit (docs/RELIABILITY.md, "Cheap acks"): claims must go through the library
    // (reclaimer, console, CLI) or raise the epoch themselves; checkEveryAck is the way out.
    const stream = unique('epoch-raw');
    let release!: () => void;
    const running = new Promise<void>((resolve) => (release = resolve));
    let started = 0;
    @Controller()
    class Slow {
      @EventPattern(stream)
      async handle() {
        started += 1;
        if (started > 2) await running;
      }
    }
    const { app, server } = await startMicroservice([Slow], { consumer: 'old-owner', checkEveryAck, ...quiet });
    closers.push(() => app.close());
    const acks = ackCounter(server);
    const lost: string[] = [];
    server.events.on('lease-lost', ({ id }) => lost.push(id));
    await warmUp(redis, stream, acks);
    const id = (await redis.xadd(stream, '*', 'data', '{"n":1}'))!;
    await waitFor(() => started === 3, 'the handler to start');
    await redis.xclaim(stream, 'nest', 'new-owner', 0, id);
    release();
    const rows = async () => ((await redis.xpending(stream, 'nest', '-', '+', 10)) as Row[]).map(([rowId, c]) => [rowId, c]);
    if (checkEveryAck) {
      await waitFor(() => lost.length > 0, 'the old owner to try its ack');
      expect(await rows()).toEqual([[id, 'new-owner']]);
    } else {
      await acks.until(3);
      expect(await rows()).toEqual([]);
    }
  });
});
