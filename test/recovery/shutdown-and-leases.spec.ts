import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { HealthIndicatorService } from '@nestjs/terminus';
import { RedisStreamsContext, RedisStreamsHealthIndicator } from 'nest-redis-streams';
import { pendingCount, redisClient, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

// CommonJS helper shared with the scripts: a private redis-server whose process a test can stop.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options?: { appendonly?: boolean }): Promise<{ url: string; child: { pid: number }; stop(): Promise<void> }>;
};

jest.setTimeout(30_000);

type PendingRow = [id: string, consumer: string, idleMs: number, deliveries: number];

describe('shutdown and lease life', () => {
  const { redis, closers } = testContext();

  it('close() keeps renewing the leases of running handlers until they finish, so no other instance takes them over', async () => {
    const stream = unique('close-lease');
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const handlerFor = (name: string) => {
      @Controller()
      class Slow {
        @EventPattern(stream, { minIdleTimeMs: 300 })
        async handle() {
          log.push(`${name} start`);
          await gate;
          log.push(`${name} done`);
        }
      }
      return Slow;
    };
    const a = await startMicroservice([handlerFor('A')], { consumer: 'pod-a', reclaimIntervalMs: 0, shutdownTimeoutMs: 10_000 });
    await redis.xadd(stream, '*', 'n', '1');
    await waitFor(() => log.length === 1, 'A to start the entry');
    const b = await startMicroservice([handlerFor('B')], { consumer: 'pod-b', reclaimIntervalMs: 50 });
    closers.push(() => b.app.close());

    const closing = a.app.close();
    // Long enough for B's reclaimer to steal the entry several times over if A's lease stopped.
    await waitFor(async () => {
      const [row] = (await redis.xpending(stream, 'nest', '-', '+', 1)) as PendingRow[];
      return row && log.length === 1 ? Date.now() : null;
    }, 'A to be closing');
    const startedClosing = Date.now();
    await waitFor(() => Date.now() - startedClosing > 1_000, 'a second of B reclaim rounds');
    release();
    await closing;
    expect(log).toEqual(['A start', 'A done']);
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
  });

  it('close() waits for a reclaim round in flight and hands its entries back instead of running them', async () => {
    const stream = unique('close-reclaim');
    const ran: string[] = [];
    @Controller()
    class Recorder {
      // No read-ahead, so the reclaim reserve (twice prefetchCount) is two entries.
      @EventPattern(stream, { minIdleTimeMs: 100, prefetchCount: 1 })
      handle(@Ctx() ctx: RedisStreamsContext) {
        ran.push(ctx.getEntryId());
      }
    }
    // Three entries held by a consumer that died before the server started.
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    for (let i = 0; i < 3; i++) await redis.xadd(stream, '*', 'n', String(i));
    await redis.xreadgroup('GROUP', 'nest', 'ghost', 'COUNT', 3, 'STREAMS', stream, '>');
    const { app, server } = await startMicroservice([Recorder], { consumer: 'pod-c', reclaimIntervalMs: 0 });
    await waitFor(async () => {
      const rows = (await redis.xpending(stream, 'nest', 'IDLE', 150, '-', '+', 10)) as PendingRow[];
      return rows.length === 3;
    }, 'the entries to be idle past min-idle');

    const round = server.reclaimNow();
    await app.close();
    // A round takes at most twice prefetchCount (here 1): two of the three.
    expect(await round).toBe(2);
    expect(ran).toEqual([]);
    const rows = (await redis.xpending(stream, 'nest', '-', '+', 10)) as PendingRow[];
    expect(rows.map(([, owner]) => owner).sort()).toEqual(['ghost', 'pod-c', 'pod-c']);
    // Handed back: idle at least min-idle, so any consumer's next reclaim round takes them.
    for (const [, , idleMs] of rows) expect(Number(idleMs)).toBeGreaterThanOrEqual(100);
    // And no longer held: a lease renewal running between the hand-back and the end of close()
    // would otherwise claim them again and reset that idle time (seen once under a loaded suite).
    expect(server.getConsumers().map((c) => c.heldCount)).toEqual([0]);
  });

  it('a handler past maxHandlerMs loses its lease: its signal fires, readiness shows its age, and another instance reclaims the entry', async () => {
    const stream = unique('lease-life');
    const aborted: string[] = [];
    const handledByB: number[] = [];
    @Controller()
    class Hangs {
      @EventPattern(stream, { minIdleTimeMs: 300, maxHandlerMs: 500 })
      handle(@Ctx() ctx: RedisStreamsContext) {
        ctx.getSignal().addEventListener('abort', () => aborted.push(String((ctx.getSignal().reason as Error).message)));
        return new Promise(() => undefined); // never returns
      }
    }
    @Controller()
    class Healthy {
      @EventPattern(stream, { minIdleTimeMs: 300, maxHandlerMs: 500 })
      handle(@Ctx() ctx: RedisStreamsContext) {
        handledByB.push(ctx.getDeliveryCount());
      }
    }
    const a = await startMicroservice([Hangs], { consumer: 'pod-a', reclaimIntervalMs: 0, shutdownTimeoutMs: 100 });
    closers.push(() => a.app.close());
    const expired: number[] = [];
    a.server.events.on('lease-expired', (e) => expired.push(e.runningMs));
    await redis.xadd(stream, '*', 'n', '1');
    const [consumer] = a.server.getConsumers();
    await waitFor(() => consumer.longestRunning() !== null, 'A to start the entry');
    const b = await startMicroservice([Healthy], { consumer: 'pod-b', reclaimIntervalMs: 100 });
    closers.push(() => b.app.close());

    await waitFor(() => handledByB.length === 1, 'B to reclaim the entry once its lease expired');
    expect(handledByB).toEqual([2]);
    expect(expired).toHaveLength(1);
    expect(expired[0]).toBeGreaterThan(500);
    expect(aborted).toEqual([expect.stringContaining('ran past maxHandlerMs (500 ms)')]);
    const ready = await new RedisStreamsHealthIndicator(new HealthIndicatorService()).isReady('streams', a.server);
    expect(ready.streams.streams[0].oldestRunningMs).toBeGreaterThan(500);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'B to ack it');
  });

  it('close() ends even when Redis stops answering: past shutdownTimeoutMs plus a grace period the connections are dropped', async () => {
    const own = await startRedis({ appendonly: false });
    const stream = unique('close-stuck');
    let finish!: () => void;
    const running = new Promise<void>((resolve) => (finish = resolve));
    let started = false;
    @Controller()
    class Slow {
      @EventPattern(stream)
      async handle() {
        started = true;
        await running;
      }
    }
    const { app } = await startMicroservice([Slow], { connection: own.url, shutdownTimeoutMs: 300 });
    try {
      const direct = redisClient(own.url);
      await direct.xadd(stream, '*', 'n', '1');
      await waitFor(() => started, 'the handler to start');
      direct.disconnect();
      // The server process stops answering (a node lost mid-failover): nothing Redis is asked returns.
      process.kill(own.child.pid, 'SIGSTOP');
      finish();
      let closed = false;
      const closing = app.close().then(() => (closed = true));
      // shutdownTimeoutMs (300 ms) + the 5 s grace period, then the connections are dropped.
      await waitFor(() => closed, 'close() to end although Redis never answers', 15_000);
      await closing;
    } finally {
      process.kill(own.child.pid, 'SIGCONT');
      await own.stop();
    }
  });
});
