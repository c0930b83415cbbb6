import type { Redis } from 'ioredis';
import { DeadLetterService, OperationError, StreamOperations } from 'nest-redis-streams';
import { type ConsoleApp, startConsoleApp } from '../console/console-app.js';
import { startGatedConsumer } from '../ordering/block-key-gates.js';
import { blockOf, waiting } from '../ordering/block-key-support.js';
import { readAll, redisClient, testContext, unique, waitFor } from '../support/helpers.js';

// An operator's write that checks the entry (pending? whose?) in one call and acts in another
// races whatever happens in between: a consumer's ack or park, a consumer reclaiming it, a second
// operator (or a double click). Each test puts the competing step exactly between the read and
// the write (a hook on the operations' own connection), or runs two writes at once many times.

jest.setTimeout(60_000);

type Command = 'xpending' | 'xrange';

describe('operator writes racing a consumer or another operator', () => {
  const { redis, closers } = testContext();
  const dlq = (stream: string) => `${stream}:dlq`;
  const opsOn = (client: Redis, stream: string) => new StreamOperations(client, { streams: [stream] });

  /** Entries of a new stream read by consumer `c1` of group `g`: pending, none acked. */
  async function pendingEntries(count: number): Promise<{ stream: string; ids: string[] }> {
    const stream = unique('op-race');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push((await redis.xadd(stream, '*', 'n', String(i))) as string);
    await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', count, 'STREAMS', stream, '>');
    return { stream, ids };
  }

  /**
   * Operations on a connection of their own whose `command` runs `between` once, right after the
   * first reply to a call whose arguments `when` picks: the read an operator's write acts on.
   */
  function opsWithStepAfter(
    stream: string,
    command: Command,
    when: (args: unknown[]) => boolean,
    between: () => Promise<unknown>,
  ): StreamOperations {
    const client = redisClient();
    closers.push(() => client.quit());
    const original = (client[command] as (...args: unknown[]) => Promise<unknown>).bind(client);
    let done = false;
    const hooked = async (...args: unknown[]) => {
      const reply = await original(...args);
      if (!done && when(args)) {
        done = true;
        await between();
      }
      return reply;
    };
    Object.assign(client, { [command]: hooked });
    return opsOn(client, stream);
  }

  /** The operations' read of entry `id`'s PEL row (XPENDING stream group id id 1). */
  const readsRow = (id: string) => (args: unknown[]) => args[2] === id;

  /** A pending entry and operations whose read of it is followed by another operator's park of it. */
  async function parkedByBobMeanwhile() {
    const { stream, ids } = await pendingEntries(1);
    let letter = '';
    const ops = opsWithStepAfter(stream, 'xpending', readsRow(ids[0]), async () => {
      letter = (await opsOn(redis, stream).park('bob', stream, 'g', ids[0])).deadLetterId;
    });
    return { stream, ids, ops, parkedAs: () => letter };
  }

  /** The message of the `conflict` `write` is refused with. */
  async function conflictOf(write: Promise<unknown>): Promise<string> {
    const outcome: unknown = await write.catch((err: unknown) => err);
    expect(outcome).toBeInstanceOf(OperationError);
    expect(outcome).toMatchObject({ kind: 'conflict' });
    return (outcome as OperationError).message;
  }

  describe('park', () => {
    it('a consumer acks the entry between the check and the park: refused (acknowledged), no dead letter', async () => {
      const { stream, ids } = await pendingEntries(1);
      const ops = opsWithStepAfter(stream, 'xpending', readsRow(ids[0]), () => redis.xack(stream, 'g', ids[0]));

      const message = await conflictOf(ops.park('alice', stream, 'g', ids[0]));
      expect(message).toContain(ids[0]);
      expect(message).toContain('acknowledged meanwhile');
      expect(await redis.xlen(dlq(stream))).toBe(0);
    });

    it('another operator parks it between the check and the park: one dead letter, whose id the refusal names', async () => {
      const { stream, ids, ops, parkedAs } = await parkedByBobMeanwhile();

      const message = await conflictOf(ops.park('alice', stream, 'g', ids[0]));
      expect(message).toContain(`parked meanwhile, as dead letter ${parkedAs()}`);
      expect((await readAll(redis, dlq(stream))).map(([id]) => id)).toEqual([parkedAs()]);
    });

    it('clicked twice at once, for 20 entries: one dead letter each, the other click refused', async () => {
      const { stream, ids } = await pendingEntries(20);
      const other = redisClient();
      closers.push(() => other.quit());
      const [a, b] = [opsOn(redis, stream), opsOn(other, stream)];

      const outcomes = await Promise.all(
        ids.map((id) => Promise.allSettled([a.park('alice', stream, 'g', id), b.park('bob', stream, 'g', id)])),
      );
      const letters = await readAll(redis, dlq(stream));
      expect(letters.map(([, fields]) => fields['dlq:id']).sort()).toEqual([...ids].sort());
      for (const pair of outcomes) {
        expect(pair.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
        const [refused] = pair.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
        // A conflict when it checked before the other's park, not found (not pending) when after.
        expect(['conflict', 'not-found']).toContain((refused.reason as OperationError).kind);
      }
    });

    it('a consumer reclaims it between the check and the park: parked, recording the consumer that held it', async () => {
      const { stream, ids } = await pendingEntries(1);
      const reclaim = () => redis.xclaim(stream, 'g', 'c2', 0, ids[0], 'JUSTID');
      const ops = opsWithStepAfter(stream, 'xpending', readsRow(ids[0]), reclaim);

      const { deadLetterId } = await ops.park('alice', stream, 'g', ids[0]);
      const [[id, fields]] = await readAll(redis, dlq(stream));
      expect([id, fields['dlq:id'], fields['dlq:consumer']]).toEqual([deadLetterId, ids[0], 'c2']);
      expect(await redis.xpending(stream, 'g')).toEqual([0, null, null, null]);
    });

    it('the console, two clicks at once on each of 10 entries: one dead letter each, the other click refused (409 or 404)', async () => {
      const { stream, ids } = await pendingEntries(10);
      const web: ConsoleApp = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'alice' });
      closers.push(() => web.app.close());

      const click = (id: string) => web.post('park', { stream, group: 'g', id });
      const pairs = await Promise.all(ids.map((id) => Promise.all([click(id), click(id)])));
      const letters = await readAll(redis, dlq(stream));
      expect(letters.map(([, fields]) => fields['dlq:id']).sort()).toEqual([...ids].sort());
      for (const [i, pair] of pairs.entries()) {
        const [parked, other] = pair[0].status === 200 ? pair : [pair[1], pair[0]];
        expect(parked.status).toBe(200);
        // Checked before the other's park: a conflict naming its dead letter; checked after it: not pending.
        expect([404, 409]).toContain(other.status);
        if (other.status === 409) {
          expect(other.body.message).toContain(`Entry ${ids[i]} of group "g"`);
          expect(other.body.message).toContain(`dead letter ${parked.body.deadLetterId}`);
        }
      }
    });
  });

  describe('ack', () => {
    it('parked by another operator between the check and the ack: refused, naming the dead letter', async () => {
      const { stream, ids, ops, parkedAs } = await parkedByBobMeanwhile();

      const message = await conflictOf(ops.ack('alice', stream, 'g', ids[0]));
      expect(message).toContain(`dead letter ${parkedAs()}`);
    });
  });

  describe('claim', () => {
    it('acked between the check and the claim: refused, nothing claimed', async () => {
      const { stream, ids } = await pendingEntries(1);
      const ops = opsWithStepAfter(stream, 'xpending', readsRow(ids[0]), () => redis.xack(stream, 'g', ids[0]));

      const message = await conflictOf(ops.claim('alice', stream, 'g', ids[0], 'c2'));
      expect(message).toContain('acknowledged meanwhile');
    });

    it('reclaimed by another consumer between the check and the claim: moved from that one, as it says', async () => {
      const { stream, ids } = await pendingEntries(1);
      const reclaim = () => redis.xclaim(stream, 'g', 'c3', 0, ids[0], 'JUSTID');
      const ops = opsWithStepAfter(stream, 'xpending', readsRow(ids[0]), reclaim);

      expect(await ops.claim('alice', stream, 'g', ids[0], 'c2')).toEqual({ claimed: ids[0], from: 'c3', to: 'c2' });
      const [[, owner]] = (await redis.xpending(stream, 'g', '-', '+', 10)) as string[][];
      expect(owner).toBe('c2');
    });
  });

  describe('hand-over', () => {
    it("an entry another consumer reclaims between the read of the PEL and the claim stays that consumer's", async () => {
      const { stream, ids } = await pendingEntries(3);
      const readsHeld = (args: unknown[]) => args[5] === 'c1';
      const reclaim = () => redis.xclaim(stream, 'g', 'c3', 0, ids[1], 'JUSTID');
      const ops = opsWithStepAfter(stream, 'xpending', readsHeld, reclaim);

      expect(await ops.handOver('alice', stream, 'g', 'c1', 'c2')).toEqual({ moved: 2, tombstoned: [] });
      const owners = (await redis.xpending(stream, 'g', '-', '+', 10)) as string[][];
      expect(owners.map(([id, owner]) => [id, owner])).toEqual([
        [ids[0], 'c2'],
        [ids[1], 'c3'],
        [ids[2], 'c2'],
      ]);
    });
  });

  describe('dead letters', () => {
    it('re-driven twice at once, for 20 dead letters: one new entry each, the other click not found', async () => {
      const { stream, ids } = await pendingEntries(20);
      for (const id of ids) await opsOn(redis, stream).park('alice', stream, 'g', id);
      const letters = (await readAll(redis, dlq(stream))).map(([id]) => id);
      const other = redisClient();
      closers.push(() => other.quit());
      const [a, b] = [opsOn(redis, stream), new DeadLetterService(other)];

      const outcomes = await Promise.all(
        letters.map((id) => Promise.allSettled([a.redrive('alice', stream, id), b.redrive(dlq(stream), id)])),
      );
      const redriven = (await readAll(redis, stream)).filter(([, fields]) => fields['nrs:redriven_from']);
      expect(redriven.map(([, fields]) => fields['nrs:redriven_from']).sort()).toEqual([...letters].sort());
      expect(await redis.xlen(dlq(stream))).toBe(0);
      for (const [byOps, byService] of outcomes) {
        // The service answers null for a dead letter that is gone; the operations refuse it as not found.
        if (byService.status === 'rejected') throw byService.reason;
        if (byOps.status === 'rejected') expect((byOps.reason as OperationError).kind).toBe('not-found');
        expect([byOps.status === 'fulfilled', byService.value !== null].filter(Boolean)).toHaveLength(1);
      }
    });

    it('the discard of a blocking dead letter re-driven meanwhile releases nothing: the re-drive runs before the held entries', async () => {
      const stream = unique('op-race-bk');
      const first = await startGatedConsumer(closers, stream, { failures: new Map([['A:1', 1]]) }, { maxDeliveries: 1 });
      await redis.xadd(stream, '*', 'k', 'A', 'n', '1');
      await waitFor(async () => (await blockOf(redis, stream, 'A'))?.state === 'parked', 'A:1 parked');
      await redis.xadd(stream, '*', 'k', 'A', 'n', '2');
      await waitFor(async () => (await waiting(redis, stream, 'A')) === 1, 'A:2 held');
      // Stopped: the state after the race is read before anything runs again.
      await closers.pop()!();
      expect(first.done).toEqual([]);
      const { deadLetter } = (await blockOf(redis, stream, 'A'))!;

      const redrive = () => opsOn(redis, stream).redrive('bob', stream, deadLetter);
      const readsLetter = (args: unknown[]) => args[0] === dlq(stream) && args[1] === deadLetter;
      const ops = opsWithStepAfter(stream, 'xrange', readsLetter, redrive);
      await expect(ops.discard('alice', stream, deadLetter)).rejects.toMatchObject({ kind: 'not-found' });
      expect(await blockOf(redis, stream, 'A')).toMatchObject({ state: 'parked', deadLetter });
      expect(await waiting(redis, stream, 'A')).toBe(1);

      const { done } = await startGatedConsumer(closers, stream, {}, { maxDeliveries: 1 });
      await waitFor(() => done.length === 2, 'the re-driven A:1 and the held A:2 handled');
      expect(done).toEqual(['A:1', 'A:2']);
    });
  });
});
