import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { RedisStreamsMetrics, StreamOperations } from 'nest-redis-streams';
import { Registry } from 'prom-client';
import { seedBlockedKey } from '../support/blocked-keys.js';
import { redisClient, startMicroservice, unique } from '../support/helpers.js';
import { readmeAclLines } from './acl-users.js';

// CommonJS helper shared with the scripts: a private redis-server whose users this test defines.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(): Promise<{ url: string; port: number; stop(): Promise<void> }>;
};

jest.setTimeout(60_000);

const PASSWORDS = { consumer: 'consumer-secret-1', producer: 'producer-secret-2', operator: 'operator-secret-3', keda: 'k-4' };

describe('least privilege: the docs ACL users read blocked keys', () => {
  let redisProcess: { url: string; port: number; stop(): Promise<void> };
  let admin: Redis;
  const closers: Array<() => unknown> = [];
  const urlOf = (user: keyof typeof PASSWORDS) => `redis://nrs-${user}:${PASSWORDS[user]}@127.0.0.1:${redisProcess.port}`;

  beforeAll(async () => {
    redisProcess = await startRedis();
    admin = redisClient(redisProcess.url);
    for (const [, ...args] of readmeAclLines(PASSWORDS)) await admin.call('ACL', ...args);
  });
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });
  afterAll(async () => {
    await admin.quit();
    await redisProcess.stop();
  });

  it("lets the consumer's metrics sample the blocked-key gauges and the operator list the blocked keys", async () => {
    const name = unique('acl-blocked').replace(/^t:/, '');
    const stream = `app:${name}`;
    @Controller()
    class Quiet {
      @EventPattern(name)
      handle() {}
    }
    const { app, server } = await startMicroservice([Quiet], { connection: urlOf('consumer'), keyPrefix: 'app:' });
    closers.push(() => app.close());
    const group = server.getConsumers()[0].group;
    await seedBlockedKey(admin, {
      stream,
      group,
      key: 'k',
      state: 'parked',
      entry: '1-0',
      deadLetter: '2-0',
      since: Date.now(),
      held: ['a'],
    });

    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0 });
    closers.push(() => metrics.close());
    await metrics.sampleNow();
    const gauge = async (metric: string) =>
      (await registry.getSingleMetric(metric)!.get()).values.find((v) => v.labels.stream === stream)?.value;
    expect([await gauge('redis_streams_blocked_keys'), await gauge('redis_streams_blocked_entries')]).toEqual([1, 1]);

    const operator = redisClient(urlOf('operator'));
    closers.push(() => operator.quit());
    const blocked = await new StreamOperations(operator, { streams: [stream] }).blockedKeys(stream, { group });
    expect(blocked.map((b) => [b.key, b.state, b.waiting])).toEqual([['k', 'parked', 1]]);
  });
});
