import { Controller, Logger } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { RedisStreamsContext } from 'nest-redis-streams';
import { fillableRedis } from '../support/full-redis.js';
import { pendingCount, startMicroservice, unique, waitFor, testContext } from '../support/helpers.js';

// Redis at maxmemory with noeviction refuses every write that could grow it (OOM command not
// allowed). A consumer must keep its promise there: what its handlers finished is acked (an XACK
// only frees memory, and Redis lets it through, watched or in the ack script), and what needs a
// write it cannot make (a dead-letter copy) stays pending, never acked without its copy.

describe('a consumer whose Redis is full', () => {
  const { closers } = testContext();

  const fullRedis = () => fillableRedis(closers);

  it.each([
    { way: 'a plain XACK under WATCH', checkEveryAck: false, watched: true },
    { way: 'the ack script checking each owner', checkEveryAck: true, watched: false },
  ])(
    'acks what its handlers finish once Redis is full ($way), each entry handled once',
    async ({ checkEveryAck, watched }) => {
      const redis = await fullRedis();
      const stream = unique('full-acks');
      let open!: () => void;
      const gate = new Promise<void>((resolve) => (open = resolve));
      const handled: string[] = [];
      @Controller()
      class Held {
        @EventPattern(stream, { concurrency: 8 })
        async handle(@Payload() payload: { n: number }, @Ctx() ctx: RedisStreamsContext) {
          if (payload.n >= 0) await gate;
          handled.push(`${payload.n}@${ctx.getDeliveryCount()}`);
        }
      }
      const { app } = await startMicroservice([Held], {
        connection: redis.url,
        consumer: 'c',
        minIdleTimeMs: 60_000,
        checkEveryAck,
      });
      closers.push(() => app.close());
      // Two entries acked first: the first ack answers with the claim epoch, and the read that
      // brings the second may have been sent before that answer. Reads from then on carry the
      // epoch, which the watched ack needs.
      for (const n of [-2, -1]) {
        await redis.admin.xadd(stream, '*', 'n', String(n));
        await waitFor(
          async () => handled.length === n + 3 && (await pendingCount(redis.admin, stream, 'nest')) === 0,
          'a first ack',
        );
      }
      for (let n = 0; n < 40; n++) await redis.admin.xadd(stream, '*', 'n', String(n));
      await waitFor(async () => (await pendingCount(redis.admin, stream, 'nest')) === 40, 'all 40 read and held');
      await redis.fill();
      await expect(redis.admin.xadd(stream, '*', 'data', '{}')).rejects.toThrow(/OOM/);
      await redis.admin.config('RESETSTAT');
      open();
      await waitFor(async () => (await pendingCount(redis.admin, stream, 'nest')) === 0, 'the acks under a full Redis');
      expect(handled.sort()).toEqual(Array.from({ length: 42 }, (_, n) => `${n - 2}@1`).sort());
      // The acks went the way named: an EXEC only where they are watched. Redis 7.0 refuses any
      // command queued in MULTI while it is out of memory, the XACK too: that EXEC aborts and the
      // ack script acks the batch instead (Redis 8.6 and Valkey 9.1 queue it). Either way no ack is lost.
      const stats = await redis.admin.info('commandstats');
      const execs = Number(/cmdstat_exec:calls=(\d+)/.exec(stats)?.[1] ?? 0);
      expect(execs > 0).toBe(watched);
      expect(stats).toMatch(/cmdstat_xack:calls=[1-9]/);
    },
    60_000,
  ); // a redis-server process

  it('keeps an entry pending while its dead-letter copy is refused, and dead-letters it once when Redis has room', async () => {
    const redis = await fullRedis();
    const stream = unique('full-dlq');
    const deadLetters = `${stream}:dlq`;
    let attempts = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    @Controller()
    class Failing {
      @EventPattern(stream, { maxDeliveries: 1, deadLetterStream: deadLetters })
      async handle() {
        attempts++;
        await gate;
        throw new Error('payment provider down');
      }
    }
    const { app } = await startMicroservice([Failing], {
      connection: redis.url,
      consumer: 'c',
      minIdleTimeMs: 300,
      reclaimIntervalMs: 100,
    });
    closers.push(() => app.close());
    const errors = jest.spyOn(Logger.prototype, 'error');
    closers.push(async () => errors.mockRestore());
    const logged = () => errors.mock.calls.map((call) => String(call[0]));
    const id = await redis.admin.xadd(stream, '*', 'data', JSON.stringify({ order: 7 }));
    await waitFor(() => attempts === 1, 'the first attempt');
    // Full before the handler fails: its dead-letter copy is refused.
    await redis.fill();
    open();
    await waitFor(() => logged().some((line) => line.includes(id!) && line.includes('OOM')), 'the refused copy to be reported');
    await waitFor(async () => {
      const rows = (await redis.admin.xpending(stream, 'nest', '-', '+', 10)) as Array<[string, string, number, number]>;
      return rows.length === 1 && rows[0][0] === id;
    }, 'the failed entry to stay pending under a full Redis');
    expect(await redis.admin.xlen(deadLetters)).toBe(0);
    await redis.drain();
    await waitFor(async () => (await redis.admin.xlen(deadLetters)) === 1, 'the dead-letter copy once Redis has room', 20_000);
    await waitFor(async () => (await pendingCount(redis.admin, stream, 'nest')) === 0, 'the original acked after its copy');
    const [[, fields]] = await redis.admin.xrange(deadLetters, '-', '+');
    expect(fields.slice(0, 6)).toEqual(['dlq:reason', expect.any(String), 'dlq:stream', stream, 'dlq:id', id]);
    expect(attempts).toBe(1); // dead-lettered, not run again
  }, 60_000); // a redis-server process
});
