import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { HealthIndicatorService } from '@nestjs/terminus';
import { RedisStreamsHealthIndicator } from 'nest-redis-streams';
import { startMicroservice, unique, waitFor } from '../support/helpers.js';

// CommonJS helper shared with the scripts; it starts a private redis-server we may kill.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options?: object): Promise<{ url: string; kill(): Promise<void>; start(): Promise<unknown>; stop(): Promise<void> }>;
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
    expect(down['redis-streams'].reason).toMatch(/Redis commands connection is "(reconnecting|connecting|close)"|Redis PING did not answer/);

    await redis.start();
    await waitFor(async () => (await indicator.isLive('redis-streams', server))['redis-streams'].status === 'up',
      'liveness to recover with Redis', 30_000);
  });

  it('fails when a read loop stops completing reads because no handler finishes, and recovers when one does', async () => {
    const stream = unique('live-wedged');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const { app, server } = await startMicroservice([controllerFor(stream, gate)], { concurrency: 1, prefetchCount: 1 });
    closers.push(() => app.close());
    const producer = server.unwrap();
    await producer.xadd(stream, '*', 'n', '1');
    await producer.xadd(stream, '*', 'n', '2');

    const wedged = await waitFor(async () => {
      const r = await indicator.isLive('redis-streams', server, { graceMs: 300 });
      return r['redis-streams'].status === 'down' ? r : null;
    }, 'liveness to fail on the stuck read loop');
    expect(wedged['redis-streams'].pingMs).toEqual(expect.any(Number));
    expect(wedged['redis-streams'].reason).toMatch(
      new RegExp(`^Stream "${stream}" group "nest": the read loop has not completed a read for \\d+ ms \\(grace 300 ms, graceMs\\)\\. ` +
        'All 1 prefetch slots hold unfinished entries'),
    );

    release();
    await waitFor(async () => (await indicator.isLive('redis-streams', server, { graceMs: 300 }))['redis-streams'].status === 'up',
      'liveness to recover once the handler finished');
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
    expect(hung['redis-streams'].reason).toMatch(new RegExp(`the handler of entry ${id} has been running for \\d+ ms \\(maxHandlerMs 400\\)`));
    release();
    await waitFor(async () => (await indicator.isLive('redis-streams', server, { maxHandlerMs: 400 }))['redis-streams'].status === 'up',
      'liveness to recover');
  });
});
