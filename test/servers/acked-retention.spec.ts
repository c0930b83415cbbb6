import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, trimAcked } from 'nest-redis-streams';
import { redisUrl, testContext, unique } from '../support/helpers.js';
import { capabilitiesOf } from './capabilities-of.js';

jest.setTimeout(30_000);

// Retention by acknowledgement keeps every entry a group still needs on every server: XTRIM ACKED
// (8.2+) also removes entries acked out of order, the floor method (7.0, Valkey 9.1) stops below
// the oldest one still needed. Asserted by the detected capability, never weaker.
describe('acked retention', () => {
  const { redis, closers } = testContext();
  const has = capabilitiesOf(redis);

  /** Ten entries; g1 acked 1-5, g2 acked 1-3 and 5, has 4 pending, and 6-10 undelivered to both. */
  async function streamWithTwoGroups(): Promise<string> {
    const stream = unique('acked');
    for (let i = 1; i <= 10; i++) await redis.xadd(stream, `${i}-0`, 'n', String(i));
    for (const group of ['g1', 'g2']) {
      await redis.xgroup('CREATE', stream, group, '0');
      await redis.xreadgroup('GROUP', group, 'c', 'COUNT', 5, 'STREAMS', stream, '>');
    }
    await redis.xack(stream, 'g1', '1-0', '2-0', '3-0', '4-0', '5-0');
    await redis.xack(stream, 'g2', '1-0', '2-0', '3-0', '5-0');
    return stream;
  }
  const ids = async (stream: string) => (await redis.xrange(stream, '-', '+')).map(([id]) => id);
  const needed = ['4-0', '6-0', '7-0', '8-0', '9-0', '10-0'];

  it('removes what every group acknowledged and keeps pending and undelivered entries', async () => {
    const stream = await streamWithTwoGroups();
    const result = await trimAcked(redis, stream, has().trimConditions);
    expect(result.method).toBe(has().trimConditions ? 'acked' : 'floor');
    // The floor method stops at 4 (g2's oldest pending), so 5, acked by both out of order, stays too.
    expect(await ids(stream)).toEqual(has().trimConditions ? needed : ['4-0', '5-0', ...needed.slice(1)]);
    // Both groups still get everything they need: g2 its pending 4, both 6-10.
    const [[, g2Pending]] = (await redis.xreadgroup('GROUP', 'g2', 'c', 'STREAMS', stream, '0')) as Array<
      [string, Array<[string, string[]]>]
    >;
    expect(g2Pending.map(([id]) => id)).toEqual(['4-0']);
    for (const group of ['g1', 'g2']) {
      const [[, fresh]] = (await redis.xreadgroup('GROUP', group, 'c', 'STREAMS', stream, '>')) as Array<
        [string, Array<[string, string[]]>]
      >;
      expect(fresh.map(([id]) => id)).toEqual(needed.slice(1));
    }
  });

  it('leaves a stream without groups alone', async () => {
    const stream = unique('acked-nogroup');
    await redis.xadd(stream, '*', 'n', '1');
    expect(await trimAcked(redis, stream, has().trimConditions)).toEqual({ stream, removed: 0, method: 'no-groups' });
    expect(await redis.xlen(stream)).toBe(1);
  });

  it('runs as a client retention mode ({ acked: true }) and refuses it combined with a target', async () => {
    const stream = await streamWithTwoGroups();
    const client = new RedisStreamsClient({
      connection: redisUrl(),
      retention: { acked: true, intervalMs: 60_000 },
      keyPrefix: '',
    });
    closers.push(() => client.close());
    await lastValueFrom(client.emit(stream, { n: 11 }));
    await client.runRetentionNow();
    const left = await ids(stream);
    expect(left.slice(0, has().trimConditions ? 1 : 2)).toEqual(has().trimConditions ? ['4-0'] : ['4-0', '5-0']);
    expect(left).toHaveLength(has().trimConditions ? 7 : 8);
    expect(() => new RedisStreamsClient({ retention: { acked: true, maxLen: 10 } })).toThrow(
      'Option "retention" with acked retention takes { acked: true } and an optional intervalMs only',
    );
  });
});
