import type { Redis } from 'ioredis';
import {
  ackAndRelease,
  markKeyFailing,
  releaseBlockedKey,
  runOrHold,
} from '../../libs/nest-redis-streams/src/dead-letter/blocked-key-scripts.js';
import { blockedKeysKey, heldEntriesKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { redisClient, testContext, unique } from '../support/helpers.js';
import { blockOf, waiting } from './block-key-support.js';

const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options?: { appendonly?: boolean }): Promise<{ url: string; stop(): Promise<void> }>;
};

// The block-key scripts called the way a consumer calls them, one step at a time, so that each
// interleaving the review found (a paused consumer, an operator's release beside a retry, a
// payload trimmed between read and run, an out-of-memory XADD) is played exactly, not hoped for.

describe('block-key scripts, step by step', () => {
  const { redis, closers } = testContext();
  const group = 'nest';

  /** A stream with `group`, entries `A:1..count` read by consumer `c`: their ids. */
  async function readEntries(client: Redis, stream: string, count: number, consumer = 'c'): Promise<string[]> {
    await client.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
    const ids: string[] = [];
    for (let n = 1; n <= count; n++) ids.push((await client.xadd(stream, '*', 'k', 'A', 'n', String(n)))!);
    await client.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'STREAMS', stream, '>');
    return ids;
  }
  const as = (stream: string, consumer = 'c') => ({ stream, group, consumer });

  it("does not block a key by an entry another consumer took and acked while its handler ran (a paused consumer's late failure)", async () => {
    const stream = unique('bk-paused');
    const [first] = await readEntries(redis, stream, 1, 'paused');
    // While "paused" ran it, its min-idle ran out: "other" claimed it, ran it and acked it.
    await redis.xclaim(stream, group, 'other', 0, first);
    await redis.xack(stream, group, first);
    // "paused" resumes, its handler throws: the key must not be blocked by an entry nobody will run.
    expect(await markKeyFailing(redis, as(stream, 'paused'), first, 'A')).toBeNull();
    expect(await blockOf(redis, stream, 'A')).toBeNull();
    // Claimed but not yet acked by the other consumer: not this one's to block either.
    const second = (await redis.xadd(stream, '*', 'k', 'A'))!;
    await redis.xreadgroup('GROUP', group, 'paused', 'COUNT', 1, 'STREAMS', stream, '>');
    await redis.xclaim(stream, group, 'other', 0, second);
    expect(await markKeyFailing(redis, as(stream, 'paused'), second, 'A')).toBeNull();
    expect(await blockOf(redis, stream, 'A')).toBeNull();
    expect(await markKeyFailing(redis, as(stream, 'other'), second, 'A')).toBe('blocked');
  });

  it('refuses an operator release while the blocker is retried; forced, the old blocker no longer releases the next entry', async () => {
    const stream = unique('bk-force');
    const [first, second, third] = await readEntries(redis, stream, 3);
    expect(await markKeyFailing(redis, as(stream), first, 'A')).toBe('blocked');
    expect(await runOrHold(redis, as(stream), second, 'A')).toBe('held');
    expect(await runOrHold(redis, as(stream), third, 'A')).toBe('held');
    const where = { stream, group, deadLetterStream: `${stream}:dlq` };
    expect(await releaseBlockedKey(redis, where, 'A')).toEqual({ deleted: false, released: false, busy: 'failing' });
    const forced = await releaseBlockedKey(redis, where, 'A', '', true);
    const copyOfSecond = forced.released as string;
    expect(await blockOf(redis, stream, 'A')).toMatchObject({ state: 'releasing', entry: copyOfSecond, current: copyOfSecond });
    // The first entry's retry succeeds now: acked, and nothing released beside the running copy.
    expect(await ackAndRelease(redis, as(stream), first, 'A')).toBe('');
    expect(await waiting(redis, stream, 'A')).toBe(1);
    expect(await releaseBlockedKey(redis, where, 'A')).toMatchObject({ released: false, busy: 'releasing' });
    // Only the released copy passes, and its success releases the third.
    await redis.xreadgroup('GROUP', group, 'c', 'COUNT', 1, 'STREAMS', stream, '>');
    expect(await runOrHold(redis, as(stream), copyOfSecond, 'A')).toBe('blocker');
    const copyOfThird = (await ackAndRelease(redis, as(stream), copyOfSecond, 'A')) as string;
    const [[, fields]] = await redis.xrange(stream, copyOfThird, copyOfThird);
    expect(fields).toEqual(['k', 'A', 'n', '3', 'nrs:held_from', third, 'nrs:group', group]);
  });

  it('holds the fields read of an entry trimmed between its read and its turn, instead of running it past the block', async () => {
    const stream = unique('bk-trimmed');
    const [first, second] = await readEntries(redis, stream, 2);
    await markKeyFailing(redis, as(stream), first, 'A');
    await redis.xdel(stream, second);
    expect(await runOrHold(redis, as(stream), second, 'A')).toBe('trimmed');
    expect(await runOrHold(redis, as(stream), second, 'A', ['k', 'A', 'n', '2'])).toBe('held');
    const [[, held]] = await redis.xrange(heldEntriesKey(stream, group, 'A'), '-', '+');
    expect(held).toEqual(['k', 'A', 'n', '2', 'nrs:held_from', second]);
    expect(await redis.xpending(stream, group, '-', '+', 10)).toEqual([[first, 'c', expect.any(Number), 1]]);
  });

  it('keeps the held entries of group "a" key "b:c" apart from those of group "a:b" key "c"', async () => {
    const stream = unique('bk-colon');
    const first = (await redis.xadd(stream, '*', 'k', 'x'))!;
    const second = (await redis.xadd(stream, '*', 'k', 'y'))!;
    for (const [g, key] of [
      ['a', 'b:c'],
      ['a:b', 'c'],
    ]) {
      await redis.xgroup('CREATE', stream, g, '0');
      await redis.xreadgroup('GROUP', g, 'c', 'COUNT', 2, 'STREAMS', stream, '>');
      const target = { stream, group: g, consumer: 'c' };
      expect(await markKeyFailing(redis, target, first, key)).toBe('blocked');
      expect(await runOrHold(redis, target, second, key)).toBe('held');
    }
    expect(heldEntriesKey(stream, 'a', 'b:c')).not.toBe(heldEntriesKey(stream, 'a:b', 'c'));
    expect(await redis.xlen(heldEntriesKey(stream, 'a', 'b:c'))).toBe(1);
    expect(await redis.xlen(heldEntriesKey(stream, 'a:b', 'c'))).toBe(1);
  });

  it('holds entries behind a block record that is not valid JSON, and an operator release clears it', async () => {
    const stream = unique('bk-unreadable');
    const [first, second] = await readEntries(redis, stream, 2);
    await redis.hset(blockedKeysKey(stream, group), 'A', '{not json');
    expect(await markKeyFailing(redis, as(stream), first, 'A')).toBe('other');
    expect(await runOrHold(redis, as(stream), second, 'A')).toBe('held');
    const where = { stream, group, deadLetterStream: `${stream}:dlq` };
    const released = await releaseBlockedKey(redis, where, 'A');
    expect(released.released).toMatch(/^\d+-\d+$/);
    expect(await blockOf(redis, stream, 'A')).toMatchObject({ state: 'releasing', current: released.released });
  });

  it('leaves the blocker pending when the release cannot write (out of memory): it runs again, the key is not stranded', async () => {
    const own = await startRedis({ appendonly: false });
    closers.push(() => own.stop());
    const client = redisClient(own.url);
    closers.push(() => client.quit());
    const stream = unique('bk-oom');
    const [first, second] = await readEntries(client, stream, 2);
    await markKeyFailing(client, as(stream), first, 'A');
    await runOrHold(client, as(stream), second, 'A');
    await client.config('SET', 'maxmemory-policy', 'noeviction');
    await client.config('SET', 'maxmemory', '1');
    try {
      await expect(ackAndRelease(client, as(stream), first, 'A')).rejects.toThrow(/OOM/);
    } finally {
      await client.config('SET', 'maxmemory', '0');
    }
    expect(await client.xpending(stream, group, '-', '+', 10)).toEqual([[first, 'c', expect.any(Number), 1]]);
    expect(await blockOf(client, stream, 'A')).toMatchObject({ state: 'failing', entry: first });
    expect(await waiting(client, stream, 'A')).toBe(1);
    expect(await ackAndRelease(client, as(stream), first, 'A')).toMatch(/^\d+-\d+$/);
  });
});
