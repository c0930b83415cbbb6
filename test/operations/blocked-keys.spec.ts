import { OperationError, StreamOperations, partitionStream } from 'nest-redis-streams';
import { blockedKeysKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { seedBlockedKey } from '../support/blocked-keys.js';
import { testContext, unique } from '../support/helpers.js';

describe('StreamOperations.blockedKeys (layout seeded in real Redis)', () => {
  const { redis } = testContext();
  const ops = () => new StreamOperations(redis);

  async function streamWithGroups(...groups: string[]): Promise<string> {
    const stream = unique('blocked');
    for (const group of groups) await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
    return stream;
  }

  it("lists a group's blocked keys oldest block first, with state, blocking entry, dead letter and how many wait", async () => {
    const stream = await streamWithGroups('billing');
    const now = Date.now();
    await seedBlockedKey(redis, { stream, group: 'billing', key: 'c-2', state: 'failing', entry: '20-0', since: now - 1_000 });
    await seedBlockedKey(redis, {
      stream,
      group: 'billing',
      key: 'c-1',
      state: 'parked',
      entry: '10-0',
      deadLetter: '11-0',
      deadLetterStream: `${stream}:dlq`,
      since: now - 60_000,
      held: ['a', 'b', 'c'],
    });
    await seedBlockedKey(redis, {
      stream,
      group: 'billing',
      key: 'c-3',
      state: 'releasing',
      entry: '30-0',
      current: '31-0',
      since: now - 30_000,
      held: ['d'],
    });

    expect(await ops().blockedKeys(stream, { group: 'billing' })).toEqual([
      {
        stream,
        group: 'billing',
        key: 'c-1',
        state: 'parked',
        blockingEntry: '10-0',
        deadLetter: '11-0',
        deadLetterStream: `${stream}:dlq`,
        since: now - 60_000,
        waiting: 3,
      },
      {
        stream,
        group: 'billing',
        key: 'c-3',
        state: 'releasing',
        blockingEntry: '30-0',
        current: '31-0',
        since: now - 30_000,
        waiting: 1,
      },
      // A key blocked by a failing entry has no dead letter yet and maybe nothing waiting behind it.
      { stream, group: 'billing', key: 'c-2', state: 'failing', blockingEntry: '20-0', since: now - 1_000, waiting: 0 },
    ]);
  });

  it('reads every group of the stream without a group, and only the named group with one', async () => {
    const stream = await streamWithGroups('billing', 'shipping', 'audit');
    await seedBlockedKey(redis, { stream, group: 'billing', key: 'k', state: 'parked', entry: '1-0', since: 5, held: ['x'] });
    await seedBlockedKey(redis, { stream, group: 'shipping', key: 'k', state: 'failing', entry: '2-0', since: 6 });

    const all = await ops().blockedKeys(stream);
    expect(all.map((b) => [b.group, b.key, b.state, b.waiting])).toEqual([
      ['billing', 'k', 'parked', 1],
      ['shipping', 'k', 'failing', 0],
    ]);
    expect((await ops().blockedKeys(stream, { group: 'shipping' })).map((b) => b.group)).toEqual(['shipping']);
    expect(await ops().blockedKeys(stream, { group: 'audit' })).toEqual([]);
    // A group the stream does not have is a typo, not "nothing blocked".
    await expect(ops().blockedKeys(stream, { group: 'biling' })).rejects.toThrow(
      new OperationError('not-found', `Stream "${stream}" has no consumer group "biling".`),
    );
  });

  it('shows a record it cannot read as unreadable rather than hide a blocked key', async () => {
    const stream = await streamWithGroups('g');
    await redis.hset(blockedKeysKey(stream, 'g'), 'odd', 'not json', 'future', JSON.stringify({ state: 'paused', entry: '9-0' }));
    const blocked = await ops().blockedKeys(stream, { group: 'g' });
    expect(blocked.map((b) => [b.key, b.state, b.blockingEntry, b.since])).toEqual([
      ['future', 'unreadable', '9-0', 0],
      ['odd', 'unreadable', '', 0],
    ]);
  });

  it('reads each partition stream of a partitioned stream, labelled with its partition stream key', async () => {
    const stream = unique('blocked-parts');
    const parts = [0, 1, 2, 3].map((p) => partitionStream(stream, p));
    for (const part of parts) await redis.xgroup('CREATE', part, 'g', '0', 'MKSTREAM');
    await seedBlockedKey(redis, { stream: parts[1], group: 'g', key: 'a', state: 'parked', entry: '1-0', since: 1, held: ['1'] });
    await seedBlockedKey(redis, {
      stream: parts[3],
      group: 'g',
      key: 'b',
      state: 'parked',
      entry: '2-0',
      since: 2,
      held: ['1', '2'],
    });

    const blocked = await ops().blockedKeys(stream, { group: 'g', partitions: 4 });
    expect(blocked.map((b) => [b.stream, b.key, b.waiting])).toEqual([
      [parts[1], 'a', 1],
      [parts[3], 'b', 2],
    ]);
    // One partition stream named on its own reads just that one.
    expect((await ops().blockedKeys(parts[3])).map((b) => b.key)).toEqual(['b']);
  });

  it('refuses a stream it does not serve, an empty group name and a partition count out of range, naming the value', async () => {
    const stream = await streamWithGroups('g');
    await expect(ops().blockedKeys(unique('nowhere'))).rejects.toThrow(/is not one the console serves/);
    await expect(ops().blockedKeys(stream, { group: '' })).rejects.toThrow(
      new OperationError('bad-request', 'group must be a non-empty string, got "".'),
    );
    await expect(ops().blockedKeys(stream, { partitions: '0' })).rejects.toThrow(
      /partitions must be an integer from 1 to 1024, got "0"/,
    );
  });
});
