import { claimEpochKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { readWithClaim } from '../../libs/nest-redis-streams/src/recovery/claim-read.js';
import { withStreamScripts } from '../../libs/nest-redis-streams/src/redis/scripts.js';
import { redisClient, testContext, unique, waitFor } from '../support/helpers.js';
import { capabilitiesOf } from './capabilities-of.js';

jest.setTimeout(30_000);

// XREADGROUP … CLAIM (Redis 8.4+) as a reclaim path, and the pitfalls it has: asserted where the
// server offers it; elsewhere the read is refused and the XAUTOCLAIM path stays the only one.
describe('XREADGROUP CLAIM reads (readWithClaim)', () => {
  const { redis, closers } = testContext();
  const has = capabilitiesOf(redis);

  /** `count` entries delivered to a consumer that then died, left idle past `idleMs`, and `fresh` new ones. */
  async function deadConsumerStream(count: number, fresh: number, idleMs: number) {
    const stream = unique('claim-read');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    for (let i = 0; i < count; i++) await redis.xadd(stream, '*', 'n', String(i));
    await redis.xreadgroup('GROUP', 'g', 'dead', 'COUNT', count, 'STREAMS', stream, '>');
    for (let i = 0; i < fresh; i++) await redis.xadd(stream, '*', 'n', `new-${i}`);
    await waitFor(async () => {
      const rows = (await redis.xpending(stream, 'g', '-', '+', count)) as Array<[string, string, number, number]>;
      return rows.every(([, , idle]) => idle >= idleMs);
    }, 'the dead consumer idle past min-idle');
    return stream;
  }
  /** Where CLAIM is absent the read is refused (the consumer then keeps the XAUTOCLAIM path alone). */
  const refusedHere = (stream: string) =>
    expect(readWithClaim(redis, { stream, group: 'g', consumer: 'c' }, 1, 0, () => false)).rejects.toThrow(/syntax error/i);
  const deliveriesOf = async (stream: string) =>
    Object.fromEntries(
      ((await redis.xpending(stream, 'g', '-', '+', 100)) as Array<[string, string, number, number]>).map(([id, , , n]) => [
        id,
        n,
      ]),
    );

  it('takes over idle entries and reads new ones in one command, counting deliveries as Redis does', async () => {
    const stream = await deadConsumerStream(2, 1, 50);
    const read = () => readWithClaim(redis, { stream, group: 'g', consumer: 'c2' }, 10, 50, () => false);
    if (!has().claim) return expect(read()).rejects.toThrow(/syntax error/i);
    const result = await read();
    expect(result.fresh).toHaveLength(1);
    expect(result.claimed).toHaveLength(2);
    // The reported count is the count before this delivery: the result counts this one, as XPENDING does.
    const counts = await deliveriesOf(stream);
    for (const entry of result.claimed) expect(entry.deliveries).toBe(counts[entry.id]);
    expect(counts[result.fresh[0][0]]).toBe(1);
  });

  it("raises the claim epoch in the same script when it took anything over, so the old owner's ack is checked", async () => {
    const stream = await deadConsumerStream(1, 0, 50);
    const scripted = withStreamScripts(redisClient());
    closers.push(() => scripted.quit());
    const key = claimEpochKey(stream, 'g');
    const [[id]] = (await redis.xpending(stream, 'g', '-', '+', 1)) as Array<[string]>;
    // The old owner knows the epoch from an earlier ack (of an id not pending: nothing acked).
    const [epoch] = await scripted.nrsAckUnderEpoch(stream, key, 'g', 'dead', '0-1', '0-1', '', '0-1');
    if (!has().claim) return refusedHere(stream);
    const result = await readWithClaim(redis, { stream, group: 'g', consumer: 'c2' }, 10, 50, () => false);
    expect(result.claimed.map((c) => c.id)).toEqual([id]);
    // Raised, and what the read returned is stamped with the raised epoch.
    expect(result.epoch).not.toBe(epoch);
    expect(result.epoch).toBe(await redis.hget(key, 'n'));
    expect(await redis.hget(key, 'claim-reads')).toBeNull();
    const [now, acked, ...notAcked] = await scripted.nrsAckUnderEpoch(stream, key, 'g', 'dead', id, id, epoch, id);
    expect([now, Number(acked), notAcked]).toEqual([result.epoch, 0, [id]]);
  });

  it('leaves the epoch alone when it took nothing over, so acks of what it read stay plain XACKs', async () => {
    const stream = await deadConsumerStream(0, 2, 0);
    if (!has().claim) return refusedHere(stream);
    const key = claimEpochKey(stream, 'g');
    const first = await readWithClaim(redis, { stream, group: 'g', consumer: 'c1' }, 1, 60_000, () => false);
    const second = await readWithClaim(redis, { stream, group: 'g', consumer: 'c1' }, 1, 60_000, () => false);
    expect([first.fresh.length, second.fresh.length]).toEqual([1, 1]);
    expect(second.epoch).toBe(first.epoch);
    expect(first.epoch).toBe(await redis.hget(key, 'n'));
    // The plain path acks without reading the PEL: an id moved by a raw XCLAIM (which raised
    // nothing) is acked all the same; the checked path would have refused it.
    const [id] = first.fresh[0];
    await redis.xclaim(stream, 'g', 'elsewhere', 0, id, 'JUSTID');
    const scripted = withStreamScripts(redisClient());
    closers.push(() => scripted.quit());
    const [, acked] = await scripted.nrsAckUnderEpoch(stream, key, 'g', 'c1', id, id, first.epoch, id);
    expect(Number(acked)).toBe(1);
  });

  it("answers epoch '' while the group carries version 0.2's claim-reads mark, keeping its acks checked", async () => {
    const stream = await deadConsumerStream(0, 1, 0);
    if (!has().claim) return refusedHere(stream);
    await redis.hset(claimEpochKey(stream, 'g'), 'claim-reads', '1');
    const result = await readWithClaim(redis, { stream, group: 'g', consumer: 'c1' }, 10, 60_000, () => false);
    expect(result.fresh).toHaveLength(1);
    expect(result.epoch).toBe('');
  });

  it('with nothing to take, tells how long until the oldest pending entry of another consumer becomes claimable', async () => {
    const stream = await deadConsumerStream(1, 0, 0);
    if (!has().claim) return refusedHere(stream);
    const before = await readWithClaim(redis, { stream, group: 'g', consumer: 'c2' }, 10, 60_000, () => false);
    expect(before.fresh.length + before.claimed.length).toBe(0);
    expect(before.claimableInMs).toBeGreaterThan(0);
    expect(before.claimableInMs).toBeLessThanOrEqual(60_000);
    // Its own oldest entry is nobody's to claim: unknown.
    const own = await readWithClaim(redis, { stream, group: 'g', consumer: 'dead' }, 10, 60_000, () => false);
    expect(own.claimableInMs).toBe(-1);
  });

  it("never hands this process's own in-flight entries back as new work", async () => {
    const stream = await deadConsumerStream(0, 2, 0);
    if (!has().claim) return refusedHere(stream);
    const first = await readWithClaim(redis, { stream, group: 'g', consumer: 'c1' }, 10, 50, () => false);
    const held = new Set(first.fresh.map(([id]) => id));
    expect(held.size).toBe(2);
    // Still running here, idle past min-idle (its lease was not renewed in time): Redis delivers it again to c1.
    await waitFor(async () => {
      const rows = (await redis.xpending(stream, 'g', '-', '+', 10)) as Array<[string, string, number, number]>;
      return rows.every(([, , idle]) => idle >= 50);
    }, 'the entries idle');
    const again = await readWithClaim(redis, { stream, group: 'g', consumer: 'c1' }, 10, 50, (id) => held.has(id));
    expect(again).toMatchObject({ fresh: [], claimed: [], alreadyHeld: [...held] });
  });

  it('skips a pending entry whose payload was trimmed, leaving it in the PEL: the XAUTOCLAIM sweep must stay', async () => {
    const stream = await deadConsumerStream(2, 0, 50);
    if (!has().claim) return refusedHere(stream);
    const [[trimmed], [kept]] = await redis.xrange(stream, '-', '+');
    await redis.xtrim(stream, 'MINID', kept);
    const result = await readWithClaim(redis, { stream, group: 'g', consumer: 'c2' }, 10, 50, () => false);
    expect(result.claimed.map((e) => e.id)).toEqual([kept]);
    expect(Object.keys(await deliveriesOf(stream))).toContain(trimmed);
    const [, , deleted] = (await redis.xautoclaim(stream, 'g', 'c2', 0, '0-0', 'COUNT', 10, 'JUSTID')) as [
      string,
      string[],
      string[],
    ];
    expect(deleted).toEqual([trimmed]);
  });
});
