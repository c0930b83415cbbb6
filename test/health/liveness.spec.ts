import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { HealthIndicatorService } from '@nestjs/terminus';
import { RedisStreamsHealthIndicator } from 'nest-redis-streams';
import { startMicroservice, unique, waitFor } from '../support/helpers.js';

// CommonJS helper shared with the scripts; it starts a private redis-server we may kill.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(
    options?: object,
  ): Promise<{ url: string; child: { pid: number }; kill(): Promise<void>; start(): Promise<unknown>; stop(): Promise<void> }>;
};

jest.setTimeout(60_000);

function controllerFor(stream: string, gate?: Promise<void>) {
  @Controller()
  class Handlers {
    @EventPattern(stream)
    async handle() {
      await gate;
    }
  }
  return Handlers;
}

describe('RedisStreamsHealthIndicator.isLive', () => {
  const indicator = new RedisStreamsHealthIndicator(new HealthIndicatorService());
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });

  it('fails while Redis is down and recovers when it comes back', async () => {
    const redis = await startRedis();
    closers.push(() => redis.stop());
    const stream = unique('live-redis');
    const { app, server } = await startMicroservice([controllerFor(stream)], { connection: redis.url });
    closers.push(() => app.close());

    const healthy = await indicator.isLive('redis-streams', server);
    expect(healthy['redis-streams']).toMatchObject({
      status: 'up',
      pingMs: expect.any(Number),
      graceMs: 3 * 200 + 5_000,
      readLoops: [{ stream, group: 'nest', consumer: server.options.consumer, lastReadAgeMs: expect.any(Number), held: 0 }],
    });

    await redis.kill();
    const down = await waitFor(async () => {
      const r = await indicator.isLive('redis-streams', server, { timeoutMs: 500 });
      return r['redis-streams'].status === 'down' ? r : null;
    }, 'liveness to fail without Redis');
    expect(down['redis-streams'].pingMs).toBeNull();
    expect(down['redis-streams'].reason).toMatch(
      /Redis commands connection is "(reconnecting|connecting|close)"|Redis PING did not answer/,
    );

    await redis.start();
    await waitFor(
      async () => (await indicator.isLive('redis-streams', server))['redis-streams'].status === 'up',
      'liveness to recover with Redis',
      30_000,
    );
  });

  it('stays up while every slot runs a slow but healthy handler, though the read loop waits for room past graceMs', async () => {
    const stream = unique('live-full');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { app, server } = await startMicroservice([controllerFor(stream, gate)], { concurrency: 1, prefetchCount: 1 });
    closers.push(() => app.close());
    const producer = server.unwrap();
    await producer.xadd(stream, '*', 'n', '1');
    await producer.xadd(stream, '*', 'n', '2');
    const [consumer] = server.getConsumers();
    await waitFor(
      () => consumer.waitingForRoomSince > 0 && Date.now() - consumer.lastReadAt > 600,
      'the loop to wait for room past graceMs',
    );

    const full = await indicator.isLive('redis-streams', server, { graceMs: 300 });
    expect(full['redis-streams'].status).toBe('up');
    expect(full['redis-streams'].readLoops[0].lastReadAgeMs).toBeGreaterThan(300);
    expect(full['redis-streams'].readLoops[0].longestHandlerMs).toBeGreaterThan(300);
    release();
  });

  it('fails when a read loop with room stops completing reads (its blocking read does not return)', async () => {
    const redis = await startRedis();
    closers.push(() => redis.stop());
    const stream = unique('live-wedged');
    const { app, server } = await startMicroservice([controllerFor(stream)], { connection: redis.url });
    closers.push(() => app.close());
    const [consumer] = server.getConsumers();
    await waitFor(() => consumer.lastReadAt > 0, 'a first read');
    // SIGSTOP: the socket stays open, so the blocking XREADGROUP neither returns nor fails.
    process.kill(redis.child.pid, 'SIGSTOP');
    closers.push(async () => process.kill(redis.child.pid, 'SIGCONT'));
    const wedged = await waitFor(async () => {
      const r = await indicator.isLive('redis-streams', server, { graceMs: 300, timeoutMs: 200 });
      return r['redis-streams'].reason?.includes('the read loop has not completed a read') ? r : null;
    }, 'liveness to fail on the stuck read loop');
    expect(wedged['redis-streams'].status).toBe('down');
    expect(wedged['redis-streams'].reason).toMatch(
      new RegExp(
        `Stream "${stream}" group "nest": the read loop has not completed a read for \\d+ ms \\(grace 300 ms, graceMs\\)\\.`,
      ),
    );
    process.kill(redis.child.pid, 'SIGCONT');
    await waitFor(
      async () => (await indicator.isLive('redis-streams', server, { graceMs: 300 }))['redis-streams'].status === 'up',
      'liveness to recover once Redis answers again',
    );
  });

  it('fails when one handler runs longer than maxHandlerMs, even though its lease keeps it owned', async () => {
    const stream = unique('live-hung');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { app, server } = await startMicroservice([controllerFor(stream, gate)], { concurrency: 4, minIdleTimeMs: 300 });
    closers.push(() => app.close());
    const id = await server.unwrap().xadd(stream, '*', 'n', '1');
    const hung = await waitFor(async () => {
      const r = await indicator.isLive('redis-streams', server, { maxHandlerMs: 400 });
      return r['redis-streams'].status === 'down' ? r : null;
    }, 'liveness to see the hung handler');
    expect(hung['redis-streams'].reason).toMatch(
      new RegExp(`the handler of entry ${id} has been running for \\d+ ms \\(maxHandlerMs 400\\)`),
    );
    release();
    await waitFor(
      async () => (await indicator.isLive('redis-streams', server, { maxHandlerMs: 400 }))['redis-streams'].status === 'up',
      'liveness to recover',
    );
  });
});
