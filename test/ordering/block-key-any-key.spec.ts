import { StreamOperations } from 'nest-redis-streams';
import { heldEntriesKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { pendingCount, readAll, testContext, unique, waitFor } from '../support/helpers.js';
import { blockOf, runsOf, startBlockKeyConsumer, waiting } from './block-key-support.js';

// Every string is an ordering key: the empty one (only a missing key means "no key"), keys that
// hold ':' like the held stream's name does, text that looks binary or like a pattern, and a long
// one. Each goes through hold, park, re-drive, discard and release with a real consumer, so no
// layer can take one of them for "no key" or mix it up with another key.

const KEYS: Array<[string, string]> = [
  ['"" (empty)', ''],
  ['"a:b:" (colons)', 'a:b:'],
  ['"\\u00ff\\u0001{}*?[]" (binary-looking)', '\u00ff\u0001{}*?[]'],
  ['of 1 KB', 'k'.repeat(1024)],
];

describe.each(KEYS)("onDeadLetter: 'block-key', ordering key %s", (_, key) => {
  const { redis, closers } = testContext();
  const ops = () => new StreamOperations(redis);
  /** Adds entry `n` of the key; `fatal`: its handler throws NonRetryableError. */
  const add = (stream: string, n: string, fatal = false) =>
    redis.xadd(stream, '*', 'k', key, 'n', n, ...(fatal ? ['fatal', '1'] : [])) as Promise<string>;
  const parked = (stream: string, entry: string) =>
    waitFor(async () => {
      const block = await blockOf(redis, stream, key);
      return block?.state === 'parked' && block.entry === entry ? block.deadLetter : null;
    }, 'the key parked on its entry');
  const name = (n: number) => `${key}:${n}`;
  const keyFree = async (stream: string) => {
    await waitFor(async () => (await blockOf(redis, stream, key)) === null, 'the key free');
    expect(await redis.exists(heldEntriesKey(stream, 'nest', key))).toBe(0);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'nothing pending');
  };

  it('a non-retryable failure parks the entry, holds the later ones, and its re-drive runs them all in order', async () => {
    const stream = unique('bk-any-fatal');
    const { done } = await startBlockKeyConsumer(closers, stream, new Map([[name(1), 1]]), { maxDeliveries: 5 });
    const first = await add(stream, '1', true);
    const letter = await parked(stream, first);
    await add(stream, '2');
    await add(stream, '3');
    await waitFor(async () => (await waiting(redis, stream, key)) === 2, 'entries 2 and 3 held');
    expect(runsOf(done, key)).toEqual([]);
    const [[, fields]] = await readAll(redis, `${stream}:dlq`);
    expect(fields).toMatchObject({ 'nrs:blocked_key': key, 'dlq:reason': 'non-retryable' });
    expect(await ops().blockedKeys(stream)).toEqual([
      expect.objectContaining({ key, state: 'parked', blockingEntry: first, deadLetter: letter, waiting: 2 }),
    ]);

    await ops().redrive('tester', stream, letter);
    await waitFor(() => runsOf(done, key).length === 3, 'the re-drive and the held entries handled');
    expect(runsOf(done, key)).toEqual([name(1), name(2), name(3)]);
    await keyFree(stream);
  });

  it('retried then parked: its re-drive passes the block; a later blocker is released by its discard, the next by hand', async () => {
    const stream = unique('bk-any-retried');
    const failures = new Map([
      [name(1), 2],
      [name(3), 1],
      [name(5), 1],
    ]);
    const { done } = await startBlockKeyConsumer(closers, stream, failures, { maxDeliveries: 2 });
    const first = await add(stream, '1');
    // Its turn comes after entry 1's failure has blocked the key (one key's turns run one by one).
    await add(stream, '2');
    const letter = await parked(stream, first);
    await waitFor(async () => (await waiting(redis, stream, key)) === 1, 'entry 2 held');
    await ops().redrive('tester', stream, letter);
    await waitFor(() => runsOf(done, key).length === 2, 'the re-drive and entry 2 handled');
    expect(runsOf(done, key)).toEqual([name(1), name(2)]);
    await keyFree(stream);

    // Discard: the dead letter goes, the held entry runs without it.
    const third = await add(stream, '3', true);
    const thirdLetter = await parked(stream, third);
    await add(stream, '4');
    await waitFor(async () => (await waiting(redis, stream, key)) === 1, 'entry 4 held');
    expect(await ops().discard('tester', stream, thirdLetter)).toEqual({
      discarded: thirdLetter,
      released: { key, released: expect.stringMatching(/^\d+-\d+$/) },
    });
    await waitFor(() => runsOf(done, key).length === 3, 'entry 4 handled');
    await keyFree(stream);

    // Release by hand: the dead letter stays, the held entry runs.
    const fifth = await add(stream, '5', true);
    await parked(stream, fifth);
    await add(stream, '6');
    await waitFor(async () => (await waiting(redis, stream, key)) === 1, 'entry 6 held');
    expect(await ops().releaseBlockedKey('tester', stream, key, { group: 'nest' })).toEqual({
      key,
      released: expect.stringMatching(/^\d+-\d+$/),
    });
    await waitFor(() => runsOf(done, key).length === 4, 'entry 6 handled');
    expect(runsOf(done, key)).toEqual([name(1), name(2), name(4), name(6)]);
    await keyFree(stream);
    expect((await readAll(redis, `${stream}:dlq`)).map(([, f]) => [f['n'], f['nrs:blocked_key']])).toEqual([['5', key]]);
  });
});
