import { Redis } from 'ioredis';
import { claimEpochKey, compareEntryIds } from '../../libs/nest-redis-streams/src/keys/index.js';
import { type ScriptedRedis, withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { redisUrl, unique } from '../support/helpers.js';

// CommonJS helper shared with the scripts: a private redis-server that can be restarted on its AOF.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options?: { appendfsync?: string }): Promise<{ url: string; restart(): Promise<void>; stop(): Promise<void> }>;
};

// The claim epoch scripts (redis/lua/claim-epoch.ts) against a real server. Which path an ack took
// is told apart by what only the plain XACK does: it acks an entry that a claim the epoch does not
// see (a raw XCLAIM) moved to another consumer; the owner check never does.

const GROUP = 'g';

type Row = [id: string, consumer: string, idle: number, deliveries: number];

describe('claim epoch scripts against Redis', () => {
  let redis: ScriptedRedis;
  beforeAll(() => {
    redis = withStreamScripts(new Redis(redisUrl(), { maxRetriesPerRequest: 1 }));
  });
  afterAll(() => redis.quit());

  /** A stream with `count` entries read (pending) by "me", and its claim epoch key. */
  async function pendingStream(
    count: number,
    on: ScriptedRedis = redis,
  ): Promise<{ stream: string; key: string; ids: string[] }> {
    const stream = unique('claim-epoch');
    await on.xgroup('CREATE', stream, GROUP, '0', 'MKSTREAM');
    const pipeline = on.pipeline();
    for (let i = 0; i < count; i++) pipeline.xadd(stream, '*', 'i', String(i));
    const ids = (await pipeline.exec())!.map(([, id]) => id as string);
    await on.xreadgroup('GROUP', GROUP, 'me', 'COUNT', count, 'STREAMS', stream, '>');
    return { stream, key: claimEpochKey(stream, GROUP), ids };
  }

  /** The ack script as the consumer sends it; answers [epoch, acked, ...not acked]. */
  function ack(stream: string, key: string, readUnder: string, ids: string[], on: ScriptedRedis = redis) {
    const sorted = [...ids].sort(compareEntryIds);
    return on.nrsAckUnderEpoch(stream, key, GROUP, 'me', sorted[0], sorted[sorted.length - 1], readUnder, ...ids);
  }

  /** Reads and acks one more entry with no epoch: the epoch the script answers with. */
  async function learnEpoch(stream: string, key: string, on: ScriptedRedis = redis): Promise<string> {
    const id = (await on.xadd(stream, '*', 'warm', 'up'))!;
    await on.xreadgroup('GROUP', GROUP, 'me', 'COUNT', 1, 'STREAMS', stream, '>');
    const [epoch, acked] = await ack(stream, key, '', [id], on);
    expect(Number(acked)).toBe(1);
    return epoch;
  }

  async function owners(stream: string): Promise<Record<string, string>> {
    const rows = (await redis.xpending(stream, GROUP, '-', '+', 100)) as Row[];
    return Object.fromEntries(rows.map(([id, consumer]) => [id, consumer]));
  }

  it('creates the epoch from the clock on the first ack, checking the owner (nothing was read under it)', async () => {
    const { stream, key, ids } = await pendingStream(2);
    await redis.xclaim(stream, GROUP, 'other', 0, ids[1]);
    const [epoch, acked, ...notAcked] = await ack(stream, key, '', ids);
    // Microseconds of Redis' clock: never a small counter a lost hash could meet again.
    expect(epoch).toMatch(/^\d{16}$/);
    expect(await redis.hget(key, 'n')).toBe(epoch);
    expect([Number(acked), notAcked]).toEqual([1, [ids[1]]]);
    expect(await owners(stream)).toEqual({ [ids[1]]: 'other' });
  });

  it('sends the plain XACK while the epoch is the one the ids were read under', async () => {
    const { stream, key, ids } = await pendingStream(3);
    const epoch = await learnEpoch(stream, key);
    // A raw XCLAIM does not raise the epoch: only the plain XACK acks what it moved.
    await redis.xclaim(stream, GROUP, 'other', 0, ids[2]);
    expect(await ack(stream, key, epoch, ids)).toEqual([epoch, 3]);
    expect(await owners(stream)).toEqual({});
  });

  it.each([
    [
      'the reclaimer (XAUTOCLAIM)',
      (s: string, k: string, id: string) => redis.nrsAutoClaimCounted(s, k, GROUP, 'other', 0, id, 10),
    ],
    [
      'an operator (console or CLI claim, hand-over)',
      (s: string, k: string, id: string) => redis.nrsClaimCounted(s, k, GROUP, 'other', id),
    ],
  ])('checks the owner once %s claimed an entry after the read, and does not ack it', async (_, claim) => {
    const { stream, key, ids } = await pendingStream(3);
    const epoch = await learnEpoch(stream, key);
    await claim(stream, key, ids[2]);
    const [now, acked, ...notAcked] = await ack(stream, key, epoch, ids.slice(0, 2).concat(ids[2]));
    expect(now).not.toBe(epoch);
    expect([Number(acked), notAcked]).toEqual([2, [ids[2]]]);
    expect(await owners(stream)).toEqual({ [ids[2]]: 'other' });
    // An entry read under the new epoch is acked with the plain XACK again (a raw XCLAIM shows it).
    const later = (await redis.xadd(stream, '*', 'i', 'later'))!;
    await redis.xreadgroup('GROUP', GROUP, 'me', 'COUNT', 1, 'STREAMS', stream, '>');
    await redis.xclaim(stream, GROUP, 'other', 0, later);
    expect(await ack(stream, key, now, [later])).toEqual([now, 1]);
  });

  it('raises the epoch when the group is created (again) or its cursor moved, not when it already exists', async () => {
    // Created again after a deletion, or moved back, the group's next reads hand entries an old
    // owner may still run to their reader: no claim, but a change of owner all the same.
    const { stream, key } = await pendingStream(1);
    const epoch = await learnEpoch(stream, key);
    await expect(redis.nrsCreateGroup(stream, key, GROUP, '0')).rejects.toThrow(/^BUSYGROUP/);
    expect(await redis.hget(key, 'n')).toBe(epoch);
    await redis.xgroup('DESTROY', stream, GROUP);
    expect(await redis.nrsCreateGroup(stream, key, GROUP, '0')).toBe('OK');
    const created = await redis.hget(key, 'n');
    expect(created).not.toBe(epoch);
    expect(await redis.nrsSetIdCounted(stream, key, GROUP, '0')).toBe('OK');
    expect(await redis.hget(key, 'n')).not.toBe(created);
  });

  it('leaves the epoch alone when a claim takes nothing (an idle reclaim round)', async () => {
    const { stream, key, ids } = await pendingStream(1);
    const epoch = await learnEpoch(stream, key);
    expect(await redis.nrsAutoClaimCounted(stream, key, GROUP, 'other', 60_000, '0-0', 10)).toEqual(['0-0', [], []]);
    expect(await redis.nrsClaimCounted(stream, key, GROUP, 'other', '1-1')).toEqual([]);
    expect(await redis.hget(key, 'n')).toBe(epoch);
    expect(await ack(stream, key, epoch, ids)).toEqual([epoch, 1]);
  });

  it('raises the epoch in the fenced takeover (exclusive ownership) as well', async () => {
    const { stream, key, ids } = await pendingStream(1);
    const epoch = await learnEpoch(stream, key);
    // The owner hash in the stream's slot, naming the taker with a lease far in the future.
    const owner = `${key}:owner`;
    await redis.hset(owner, 'owner', 'new', 'gen', '1', 'until', String(Date.now() + 600_000));
    const reply = await redis.nrsFencedAutoClaim(stream, key, owner, 'new', '1', GROUP, 'other', 0, '0-0', 10, '1');
    expect(reply?.[1]).toEqual(ids);
    expect(await redis.hget(key, 'n')).not.toBe(epoch);
    expect(await ack(stream, key, epoch, ids)).toEqual([expect.any(String), 0, ids[0]]);
    await redis.del(owner);
  });

  it('never takes the plain path after the hash was lost (restart without persistence, eviction, DEL)', async () => {
    const { stream, key, ids } = await pendingStream(2);
    const epoch = await learnEpoch(stream, key);
    // Lost, then a claim: the raise must not restart at a value an old read could carry.
    await redis.del(key);
    await redis.nrsClaimCounted(stream, key, GROUP, 'other', ids[0]);
    const [afterClaim, acked, ...notAcked] = await ack(stream, key, epoch, ids);
    expect(afterClaim).toMatch(/^\d{16}$/);
    expect(afterClaim).not.toBe(epoch);
    expect([Number(acked), notAcked]).toEqual([1, [ids[0]]]);
    // Lost with no claim after it: recreated and checked, so a raw claim is still seen.
    const second = await pendingStream(2);
    const before = await learnEpoch(second.stream, second.key);
    await redis.del(second.key);
    await redis.xclaim(second.stream, GROUP, 'other', 0, second.ids[0]);
    const [recreated, ackedNow, ...lost] = await ack(second.stream, second.key, before, second.ids);
    expect(recreated).not.toBe(before);
    expect([Number(ackedNow), lost]).toEqual([1, [second.ids[0]]]);
  });

  it('checks every ack of a group marked for CLAIM reads (their claims cannot raise the epoch)', async () => {
    const { stream, key, ids } = await pendingStream(2);
    const epoch = await learnEpoch(stream, key);
    await redis.hset(key, 'claim-reads', '1');
    await redis.xclaim(stream, GROUP, 'other', 0, ids[1]);
    const [now, acked, ...notAcked] = await ack(stream, key, epoch, ids);
    expect(now).toBe('');
    expect([Number(acked), notAcked]).toEqual([1, [ids[1]]]);
  });

  it('keeps the epoch across a restart on the AOF, and the plain path with it', async () => {
    const own = await startRedis({ appendfsync: 'always' });
    const client = withStreamScripts(new Redis(own.url, { maxRetriesPerRequest: 1, lazyConnect: false }));
    try {
      const { stream, key, ids } = await pendingStream(2, client);
      const epoch = await learnEpoch(stream, key, client);
      await own.restart();
      await client.ping();
      expect(await client.hget(key, 'n')).toBe(epoch);
      expect(await ack(stream, key, epoch, [ids[0]], client)).toEqual([epoch, 1]);
      await client.nrsAutoClaimCounted(stream, key, GROUP, 'other', 0, '0-0', 10);
      expect(await ack(stream, key, epoch, [ids[1]], client)).toEqual([expect.not.stringMatching(epoch), 0, ids[1]]);
    } finally {
      client.disconnect();
      await own.stop();
    }
  }, 60_000);

  it('runs the fast and the checked path over more ids than one XACK page (1000)', async () => {
    const { stream, key, ids } = await pendingStream(2_100);
    const [epoch, checked] = await ack(stream, key, '', ids.slice(0, 1_050));
    expect(Number(checked)).toBe(1_050);
    expect(await ack(stream, key, epoch, ids.slice(1_050))).toEqual([epoch, 1_050]);
    expect(await owners(stream)).toEqual({});
  }, 30_000);
});
