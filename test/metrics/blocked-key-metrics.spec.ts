import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { RedisStreamsMetrics } from 'nest-redis-streams';
import { Registry } from 'prom-client';
import { blockedKeysKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { clearBlockedKey, seedBlockedKey } from '../support/blocked-keys.js';
import { startMicroservice, testContext, unique } from '../support/helpers.js';

jest.setTimeout(30_000);

describe('blocked-key gauges (layout seeded in real Redis)', () => {
  const { redis, closers } = testContext();

  /** A quiet server of `stream` in groups `a` and `b`, with metrics sampled only when asked. */
  async function sampledServer(stream: string) {
    @Controller()
    class Quiet {
      @EventPattern(stream, { group: 'a' })
      a() {}
      @EventPattern(stream, { group: 'b' })
      b() {}
    }
    const { app, server } = await startMicroservice([Quiet], {});
    closers.push(() => app.close());
    const registry = new Registry();
    const metrics = new RedisStreamsMetrics().attach(server, { registry, sampleIntervalMs: 0 });
    closers.push(async () => metrics.close());
    const gauges = async (group: string) => {
      const read = async (name: string) =>
        (await registry.getSingleMetric(`redis_streams_${name}`)!.get()).values.find(
          (v) => v.labels.stream === stream && v.labels.group === group,
        )?.value;
      return {
        keys: await read('blocked_keys'),
        entries: await read('blocked_entries'),
        oldest: await read('blocked_oldest_seconds'),
      };
    };
    return { metrics, gauges };
  }

  it("counts each group's blocked keys, the entries held behind them and the oldest block's age", async () => {
    const stream = unique('blocked-metrics');
    const { metrics, gauges } = await sampledServer(stream);
    const since = Date.now() - 45 * 60_000;
    await seedBlockedKey(redis, {
      stream,
      group: 'a',
      key: 'c-1',
      state: 'parked',
      entry: '1-0',
      deadLetter: '2-0',
      since,
      held: ['x', 'y'],
    });
    await seedBlockedKey(redis, {
      stream,
      group: 'a',
      key: 'c-2',
      state: 'failing',
      entry: '3-0',
      since: Date.now(),
      held: ['z'],
    });

    await metrics.sampleNow();

    const a = await gauges('a');
    expect([a.keys, a.entries]).toEqual([2, 3]);
    // At least the 45 minutes seeded (the sample came later), so past the alert's 30 minutes.
    expect(a.oldest).toBeGreaterThanOrEqual(45 * 60);
    // A group with nothing blocked reads 0, not absent: the alert and dashboards see it is healthy.
    expect(await gauges('b')).toEqual({ keys: 0, entries: 0, oldest: 0 });

    await clearBlockedKey(redis, stream, 'a', 'c-1');
    await clearBlockedKey(redis, stream, 'a', 'c-2');
    await metrics.sampleNow();
    expect(await gauges('a')).toEqual({ keys: 0, entries: 0, oldest: 0 });
  });

  it('drops the figures of a group whose blocked keys cannot be read, keeping the other groups', async () => {
    const stream = unique('blocked-metrics-bad');
    const { metrics, gauges } = await sampledServer(stream);
    await seedBlockedKey(redis, { stream, group: 'a', key: 'k', state: 'parked', entry: '1-0', since: Date.now(), held: ['x'] });
    await metrics.sampleNow();
    expect((await gauges('a')).keys).toBe(1);

    // Something else wrote a string where the hash lives: HGETALL answers WRONGTYPE.
    await redis.del(blockedKeysKey(stream, 'a'));
    await redis.set(blockedKeysKey(stream, 'a'), 'not a hash');
    await seedBlockedKey(redis, { stream, group: 'b', key: 'k', state: 'failing', entry: '5-0', since: Date.now() });
    await metrics.sampleNow();

    expect(await gauges('a')).toEqual({ keys: undefined, entries: undefined, oldest: undefined });
    expect((await gauges('b')).keys).toBe(1);
  });
});
