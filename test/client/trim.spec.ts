import { Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { StreamTrimmer, trimSafely } from 'nest-redis-streams';
import { compareStreamIds } from '../../libs/nest-redis-streams/src/keys/index.js';
import { isAckedApproxFixed } from '../../libs/nest-redis-streams/src/trim/trim-features.js';
import { unique, waitFor } from '../support/helpers.js';
import { clientContext } from './client-fixture.js';

/**
 * Appends `count` entries and resolves with their ids, oldest first. With `newMsAt`, entries from
 * that index on get the next millisecond, as a real clock may give them (explicit ids, so the test
 * does not depend on where the clock ticks).
 */
async function fill(redis: Redis, stream: string, count: number, newMsAt?: number): Promise<string[]> {
  const pipeline = redis.pipeline();
  const ms = Date.now() - 1_000;
  for (let i = 0; i < count; i++) {
    const id = newMsAt === undefined ? '*' : i < newMsAt ? `${ms}-${i}` : `${ms + 1}-${i - newMsAt}`;
    pipeline.xadd(stream, id, 'n', String(i));
  }
  return ((await pipeline.exec()) ?? []).map(([, id]) => id as string);
}

/** The ids of `ids` the stream no longer holds. */
async function removedOf(redis: Redis, stream: string, ids: string[]): Promise<string[]> {
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.xrange(stream, id, id);
  const replies = (await pipeline.exec()) ?? [];
  return ids.filter((_, i) => (replies[i][1] as unknown[]).length === 0);
}

/** Consumer `c` of `group` reads `read` entries and acks the first `acked` of them. */
async function consume(redis: Redis, stream: string, group: string, read: number, acked: number): Promise<string[]> {
  const reply = (await redis.xreadgroup('GROUP', group, 'c', 'COUNT', read, 'STREAMS', stream, '>')) as Array<
    [string, Array<[string, string[]]>]
  >;
  const ids = reply[0][1].map(([id]) => id);
  if (acked > 0) await redis.xack(stream, group, ...ids.slice(0, acked));
  return ids;
}

async function existing(redis: Redis, stream: string, ids: string[]): Promise<number> {
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.xrange(stream, id, id);
  return ((await pipeline.exec()) ?? []).filter(([, rows]) => (rows as unknown[]).length === 1).length;
}

describe('safe trimming', () => {
  const { redis, client } = clientContext();

  it('never removes an entry pending or undelivered in any group, while plain MAXLEN does', async () => {
    const plain = unique('trim-plain');
    const safe = unique('trim-safe');
    const needed: Record<string, string[]> = {};
    const acked: Record<string, string[]> = {};
    for (const stream of [plain, safe]) {
      // The last entry both groups acked and the first one a group needs lie in different
      // milliseconds: the floor may then be any id between them (issue 24 item 20).
      const ids = await fill(redis, stream, 1000, 200);
      await redis.xgroup('CREATE', stream, 'billing', '0');
      await redis.xgroup('CREATE', stream, 'audit', '0');
      await consume(redis, stream, 'billing', 600, 300); // pending 300..599, undelivered 600..999
      await consume(redis, stream, 'audit', 200, 200); // nothing pending, undelivered 200..999
      needed[stream] = ids.slice(200);
      acked[stream] = ids.slice(0, 200);
    }
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const atRisk = await new StreamTrimmer(redis).checkMaxLen(plain, 100);
      expect(atRisk.map((g) => [g.name, g.pending, g.lag])).toEqual([
        ['audit', 0, 800],
        ['billing', 300, 400],
      ]);
      expect(warn).toHaveBeenCalledWith(
        expect.stringContaining(
          `Stream "${plain}" is trimmed with MAXLEN ~ 100, but group "billing" has 300 pending and 400 undelivered`,
        ),
      );
    } finally {
      warn.mockRestore();
    }

    await redis.xtrim(plain, 'MAXLEN', '~', 100);
    const result = await trimSafely(redis, safe, { maxLen: 100 });

    // Plain MAXLEN deleted work that both groups still had to do.
    expect(await existing(redis, plain, needed[plain])).toBeLessThan(200);
    // The safe trim kept all 800 entries some group needs and removed only what both had acked.
    // The promise is about entries, not one floor id: any floor after the last acked entry and
    // at or before the first needed one keeps it; on a server with ACKED trimming there is no floor.
    const { useAcked } = await new StreamTrimmer(redis).detectFeatures(safe);
    if (useAcked) {
      expect(result).toMatchObject({ method: 'acked', floor: null });
    } else {
      expect(result.method).toBe('floor');
      expect(compareStreamIds(result.floor!, acked[safe][199])).toBeGreaterThan(0);
      expect(compareStreamIds(result.floor!, needed[safe][0])).toBeLessThanOrEqual(0);
    }
    expect(result.removed).toBeGreaterThan(0);
    expect(await existing(redis, safe, needed[safe])).toBe(800);
    const removed = await removedOf(redis, safe, [...acked[safe], ...needed[safe]]);
    expect(removed.length).toBe(result.removed);
    expect(removed.filter((id) => !acked[safe].includes(id))).toEqual([]);
    expect(await redis.xlen(safe)).toBe(1000 - result.removed);
    expect(await redis.xlen(safe)).toBeGreaterThanOrEqual(800);
  });

  it('trims down to maxLen when the groups need fewer entries than that', async () => {
    const stream = unique('trim-caught-up');
    const ids = await fill(redis, stream, 1000);
    await redis.xgroup('CREATE', stream, 'g', '0');
    await consume(redis, stream, 'g', 800, 800); // 200 undelivered, nothing pending
    const result = await trimSafely(redis, stream, { maxLen: 300 });
    expect(await redis.xlen(stream)).toBeGreaterThanOrEqual(300);
    expect(await redis.xlen(stream)).toBeLessThan(500);
    expect(await existing(redis, stream, ids.slice(800))).toBe(200);
    expect(result.removed).toBe(1000 - (await redis.xlen(stream)));
  });

  it('keeps pending entries under an age-based retention', async () => {
    const stream = unique('trim-age');
    const old = Date.now() - 3_600_000;
    const pipeline = redis.pipeline();
    for (let i = 1; i <= 500; i++) pipeline.xadd(stream, `${old}-${i}`, 'n', String(i));
    await pipeline.exec();
    await redis.xgroup('CREATE', stream, 'g', '0');
    const read = await consume(redis, stream, 'g', 400, 250); // 250..399 pending
    const { useAcked } = await new StreamTrimmer(redis).detectFeatures(stream);
    const result = await trimSafely(redis, stream, { minIdAgeMs: 60_000 });
    if (useAcked) {
      // Redis' ACKED deletes each acked entry (not whole nodes): exactly the 250 acked ones.
      expect(result).toMatchObject({ method: 'acked', floor: null, removed: 250 });
    } else {
      expect(result).toMatchObject({ method: 'floor', floor: read[250] });
      expect(result.removed).toBe(200); // two whole nodes of 100 lie below the floor
    }
    expect(await existing(redis, stream, read.slice(250))).toBe(150);
    expect(await redis.xlen(stream)).toBe(500 - result.removed);
  });

  it.each([
    ['maxLen', { maxLen: 50 }],
    ['age-based retention', { minIdAgeMs: 60_000 }],
    ['both', { maxLen: 50, minIdAgeMs: 60_000 }],
  ])(
    'on the path this server takes (ACKED where safe, else the floor) removes only what every group acked, under %s',
    async (_, target) => {
      const stream = unique('trim-path');
      const old = Date.now() - 3_600_000;
      const pipeline = redis.pipeline();
      for (let i = 1; i <= 600; i++) pipeline.xadd(stream, `${old}-${i}`, 'n', String(i));
      await pipeline.exec();
      const ids = (await redis.xrange(stream, '-', '+')).map(([id]) => id);
      await redis.xgroup('CREATE', stream, 'billing', '0');
      await redis.xgroup('CREATE', stream, 'audit', '0');
      // billing: acked 0..149 and 200..249, pending 150..199 and 250..299, 300.. undelivered;
      // audit: acked 0..99, 100.. undelivered. Every group acked 0..99 only.
      await consume(redis, stream, 'billing', 300, 0);
      await redis.xack(stream, 'billing', ...ids.slice(0, 150), ...ids.slice(200, 250));
      await consume(redis, stream, 'audit', 100, 100);
      const { useAcked } = await new StreamTrimmer(redis).detectFeatures(stream);
      const result = await trimSafely(redis, stream, target);
      expect(result.method).toBe(useAcked ? 'acked' : 'floor');
      const left = new Set((await redis.xrange(stream, '-', '+')).map(([id]) => id));
      const removed = ids.filter((id) => !left.has(id));
      expect(removed.length).toBe(result.removed);
      expect(removed.length).toBeGreaterThan(0);
      // Nothing a group still needs went: every removed entry lies among the 100 both acked.
      expect(removed.every((id) => ids.indexOf(id) < 100)).toBe(true);
      expect(ids.slice(100).every((id) => left.has(id))).toBe(true);
      expect(await redis.xpending(stream, 'billing')).toEqual([100, ids[150], ids[299], [['c', '100']]]);
      expect(await redis.xpending(stream, 'audit')).toEqual([0, null, null, null]);
    },
  );

  it('trims a stream without groups to the target', async () => {
    const stream = unique('trim-nogroups');
    await fill(redis, stream, 500);
    const result = await trimSafely(redis, stream, { maxLen: 100 });
    expect(result).toMatchObject({ floor: null, groups: [] });
    expect(await redis.xlen(stream)).toBeLessThanOrEqual(200);
  });

  it('detects ACKED by asking Redis and falls back to the floor where it is missing or unsafe', async () => {
    const stream = unique('trim-features');
    await fill(redis, stream, 10);
    const trimmer = new StreamTrimmer(redis);
    const features = await trimmer.detectFeatures(stream);
    const [major, minor] = features.redisVersion.split('.').map(Number);
    if (major < 8 || (major === 8 && minor < 2)) expect(features.ackedOption).toBe(false);
    expect(features.useAcked).toBe(features.ackedOption && isAckedApproxFixed(features.redisVersion));
    const result = await trimmer.trim(stream, { maxLen: 5 });
    expect(result.method).toBe(features.useAcked ? 'acked' : 'floor');
    // A stream without groups: `~` alone only removes whole nodes (this one is a single node),
    // while ACKED deletes entry by entry, down to exactly maxLen: both within what was asked.
    expect(await redis.xlen(stream)).toBe(features.useAcked ? 5 : 10);
  });

  it('rejects a trim without a target', async () => {
    await expect(trimSafely(redis, 'any', {})).rejects.toThrow(/needs maxLen .* or minIdAgeMs/);
  });

  it('runs safe retention periodically on the client, sparing what a group has not acked', async () => {
    const pattern = unique('trim-client');
    await redis.xgroup('CREATE', pattern, 'g', '0', 'MKSTREAM');
    const producer = client({ retention: { maxLen: 10, safe: true, intervalMs: 50 } });
    await Promise.all(Array.from({ length: 400 }, (_, i) => lastValueFrom(producer.emit(pattern, { i }))));
    const read = await consume(redis, pattern, 'g', 300, 250); // 250..299 pending, 300..399 undelivered
    await waitFor(async () => (await redis.xlen(pattern)) <= 200, 'the periodic safe trim');
    expect(await existing(redis, pattern, read.slice(250))).toBe(50);
    // Only whole radix nodes below the floor went (envelope entries fill a 4 KiB node before 100 entries).
    expect(await redis.xlen(pattern)).toBeGreaterThanOrEqual(150);
  });
});
