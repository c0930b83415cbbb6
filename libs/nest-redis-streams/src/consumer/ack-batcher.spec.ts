import type { ScriptedRedis } from '../redis/scripts.js';
import { AckBatcher } from './ack-batcher.js';
import { EntryWrites } from './entry-writes.js';
import { PartitionFence } from '../ownership/partition-fence.js';

// The batcher is driven against a fake of the one script it calls, nrsAckUnderEpoch: it acks the
// ids this consumer owns and answers with the claim epoch it holds, the count acked and the others
// (as the Lua does; which path the Lua takes is tested against Redis in test/consumer/). With
// `held` set, each call waits until the test releases it, so a flush can be kept in flight.

interface AckCall {
  stream: string;
  group: string;
  consumer: string;
  smallest: string;
  largest: string;
  ids: string[];
}

class FakeAckScript {
  readonly owned = new Set<string>();
  readonly calls: AckCall[] = [];
  /** The claim epoch each call said its ids were read under. */
  readonly readUnder: string[] = [];
  /** The claim epoch the fake Redis holds. */
  epoch = 'e1';
  held = false;
  failWith: Error | null = null;
  private readonly waiting: Array<() => void> = [];

  own(...ids: string[]): this {
    for (const id of ids) this.owned.add(id);
    return this;
  }

  /** Lets the oldest held call answer. */
  release(): void {
    this.waiting.shift()?.();
  }

  private async ackOwned(
    stream: string,
    group: string,
    consumer: string,
    smallest: string,
    largest: string,
    ...ids: string[]
  ): Promise<string[]> {
    this.calls.push({ stream, group, consumer, smallest, largest, ids });
    if (this.held) await new Promise<void>((resolve) => this.waiting.push(resolve));
    if (this.failWith) throw this.failWith;
    // Like the Lua: the ids form a set, so an id sent twice is acked (or reported) once.
    const notOwned: string[] = [];
    for (const id of new Set(ids)) {
      if (this.owned.has(id)) this.owned.delete(id);
      else notOwned.push(id);
    }
    return notOwned;
  }

  async nrsAckUnderEpoch(
    stream: string,
    _claimEpoch: string,
    group: string,
    consumer: string,
    smallest: string,
    largest: string,
    readUnder: string,
    ...ids: string[]
  ): Promise<[string, number, ...string[]]> {
    this.readUnder.push(readUnder);
    const notOwned = await this.ackOwned(stream, group, consumer, smallest, largest, ...ids);
    return [this.epoch, new Set(ids).size - notOwned.length, ...notOwned];
  }
}

/** Runs the event loop until `done` holds (a flush starts on setImmediate); no timers. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !done(); i++) await new Promise<void>((resolve) => setImmediate(resolve));
  expect(done()).toBe(true);
}
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

function setup(fence?: PartitionFence) {
  const redis = new FakeAckScript();
  const lost: string[] = [];
  const acked: number[] = [];
  const errors: Array<[message: string, ids: string[]]> = [];
  const writes = new EntryWrites(redis as unknown as ScriptedRedis, {
    stream: 'orders',
    group: 'billing',
    consumer: 'c1',
    fence,
    deadLetterStream: 'orders:dlq',
    minIdleTimeMs: 30_000,
  });
  const batcher = new AckBatcher(
    writes,
    (id) => lost.push(id),
    (count) => acked.push(count),
    (err, ids) => errors.push([err.message, ids]),
  );
  return { batcher, redis, lost, acked, errors };
}

describe('AckBatcher', () => {
  it('sends the acks added in one turn as one call on the next turn', async () => {
    const { batcher, redis, acked } = setup();
    redis.own('1-0', '2-0', '3-0');
    batcher.add('1-0');
    batcher.add('2-0');
    batcher.add('3-0');
    expect(redis.calls).toEqual([]);
    await turn();
    expect(redis.calls).toEqual([
      { stream: 'orders', group: 'billing', consumer: 'c1', smallest: '1-0', largest: '3-0', ids: ['1-0', '2-0', '3-0'] },
    ]);
    await until(() => acked.length === 1);
    expect(acked).toEqual([3]);
  });

  it('sends acks added while a call is in flight together in the next call', async () => {
    const { batcher, redis } = setup();
    redis.held = true;
    batcher.add('1-0');
    await until(() => redis.calls.length === 1);
    batcher.add('2-0');
    batcher.add('3-0');
    await turn();
    await turn();
    expect(redis.calls).toHaveLength(1);
    redis.release();
    await until(() => redis.calls.length === 2);
    expect(redis.calls.map((call) => call.ids)).toEqual([['1-0'], ['2-0', '3-0']]);
    redis.release();
    await batcher.drain();
  });

  it('splits more than 1000 ids into calls of at most 1000, in order', async () => {
    const { batcher, redis, acked } = setup();
    const ids = Array.from({ length: 2_500 }, (_, i) => `${i + 1}-0`);
    redis.own(...ids);
    for (const id of ids) batcher.add(id);
    await batcher.drain();
    expect(redis.calls.map((call) => call.ids.length)).toEqual([1_000, 1_000, 500]);
    expect(redis.calls.flatMap((call) => call.ids)).toEqual(ids);
    expect(redis.calls.map((call) => [call.smallest, call.largest])).toEqual([
      ['1-0', '1000-0'],
      ['1001-0', '2000-0'],
      ['2001-0', '2500-0'],
    ]);
    expect(acked).toEqual([1_000, 1_000, 500]);
  });

  it('passes the smallest and largest id by stream order, not string order', async () => {
    const { batcher, redis } = setup();
    for (const id of ['5-0', '10-0', '2-10', '2-3', '9-1']) batcher.add(id);
    await batcher.drain();
    expect(redis.calls).toMatchObject([{ smallest: '2-3', largest: '10-0' }]);
  });

  it('answers addAndWait with true once acked and false for an id owned elsewhere, reporting it lost', async () => {
    const { batcher, redis, lost, acked } = setup();
    redis.own('1-0');
    const mine = batcher.addAndWait('1-0');
    const stolen = batcher.addAndWait('2-0');
    await expect(mine).resolves.toBe(true);
    await expect(stolen).resolves.toBe(false);
    expect(lost).toEqual(['2-0']);
    expect(acked).toEqual([1]);
  });

  it('resolves every waiter of one id', async () => {
    const { batcher, redis } = setup();
    redis.own('1-0');
    const waits = [batcher.addAndWait('1-0'), batcher.addAndWait('1-0'), batcher.addAndWait('1-0')];
    await expect(Promise.all(waits)).resolves.toEqual([true, true, true]);
    redis.held = true;
    const second = [batcher.addAndWait('2-0'), batcher.addAndWait('2-0')];
    await until(() => redis.calls.length === 2);
    redis.release();
    await expect(Promise.all(second)).resolves.toEqual([false, false]);
  });

  it('reports a failed call through onError and answers its waiters false, then keeps sending', async () => {
    const { batcher, redis, lost, errors } = setup();
    redis.own('1-0', '2-0', '3-0');
    redis.failWith = new Error('connection lost');
    batcher.add('1-0');
    const waiting = batcher.addAndWait('2-0');
    await expect(waiting).resolves.toBe(false);
    expect(errors).toEqual([['connection lost', ['1-0', '2-0']]]);
    expect(lost).toEqual([]);
    redis.failWith = null;
    await expect(batcher.addAndWait('3-0')).resolves.toBe(true);
  });

  it('drain resolves only after everything queued, in flight or behind it, was sent', async () => {
    const { batcher, redis } = setup();
    redis.held = true;
    batcher.add('1-0');
    await until(() => redis.calls.length === 1);
    batcher.add('2-0');
    let drained = false;
    const draining = batcher.drain().then(() => (drained = true));
    await turn();
    expect(drained).toBe(false);
    redis.release();
    await until(() => redis.calls.length === 2);
    expect(drained).toBe(false);
    redis.release();
    await draining;
    expect(redis.calls.map((call) => call.ids)).toEqual([['1-0'], ['2-0']]);
    expect(batcher.unsent().size).toBe(0);
  });

  it('drain resolves at once when nothing is queued', async () => {
    const { batcher, redis } = setup();
    await batcher.drain();
    expect(redis.calls).toEqual([]);
  });

  it('lists queued and in-flight ids as unsent until Redis answered', async () => {
    const { batcher, redis } = setup();
    redis.held = true;
    batcher.add('1-0');
    expect([...batcher.unsent()]).toEqual(['1-0']);
    await until(() => redis.calls.length === 1);
    batcher.add('2-0');
    expect([...batcher.unsent()].sort()).toEqual(['1-0', '2-0']);
    redis.release();
    await until(() => redis.calls.length === 2);
    expect([...batcher.unsent()]).toEqual(['2-0']);
    redis.release();
    await batcher.drain();
    expect(batcher.unsent().size).toBe(0);
  });
});

describe('AckBatcher and the claim epoch', () => {
  it('knows no epoch before its first answer, then the one Redis answered with', async () => {
    const { batcher, redis } = setup();
    expect(batcher.claimEpoch).toBe('');
    redis.own('1-0');
    batcher.add('1-0');
    await batcher.drain();
    expect(batcher.claimEpoch).toBe('e1');
    redis.epoch = 'e2';
    redis.own('2-0');
    batcher.add('2-0', 'e1');
    await batcher.drain();
    expect(batcher.claimEpoch).toBe('e2');
  });

  it('sends the epoch its ids were read under when they share one', async () => {
    const { batcher, redis } = setup();
    redis.own('1-0', '2-0');
    batcher.add('1-0', 'e1');
    batcher.add('2-0', 'e1');
    await batcher.drain();
    expect(redis.readUnder).toEqual(['e1']);
  });

  it('sends none (the owner is checked) when its ids were read under different epochs, or one is unknown', async () => {
    const { batcher, redis } = setup();
    redis.own('1-0', '2-0', '3-0', '4-0');
    batcher.add('1-0', 'e1');
    batcher.add('2-0', 'e2');
    await batcher.drain();
    batcher.add('3-0', 'e2');
    void batcher.addAndWait('4-0');
    await batcher.drain();
    expect(redis.readUnder).toEqual(['', '']);
  });

  it('starts a fresh stamp with the first ack queued after a flush', async () => {
    const { batcher, redis } = setup();
    redis.own('1-0', '2-0');
    batcher.add('1-0', 'e1');
    batcher.add('2-0', '');
    await batcher.drain();
    redis.own('3-0');
    batcher.add('3-0', 'e1');
    await batcher.drain();
    expect(redis.readUnder).toEqual(['', 'e1']);
  });

  it('counts what Redis says it acked, not the ids it was sent', async () => {
    const { batcher, redis, acked } = setup();
    redis.own('1-0');
    batcher.add('1-0', 'e1');
    batcher.add('1-0', 'e1');
    batcher.add('9-0', 'e1');
    await batcher.drain();
    expect(acked).toEqual([1]);
  });
});

describe('AckBatcher under exclusive ownership', () => {
  // The fenced script answers null while the fence refuses the generation (its lease ran out by
  // Redis' clock), else like the unfenced one.
  function fencedSetup() {
    const fence = new PartitionFence('owner', 'member');
    fence.grant('7', performance.now(), 60_000);
    const { batcher, redis, lost } = setup(fence);
    let refusing = true;
    const fenced = redis as unknown as { nrsAckUnderEpochFenced: (...args: string[]) => Promise<unknown> };
    fenced.nrsAckUnderEpochFenced = async (_stream, key, _owner, _member, _generation, group, consumer, ...rest) =>
      refusing ? null : redis.nrsAckUnderEpoch('orders', key, group, consumer, rest[0], rest[1], rest[2], ...rest.slice(3));
    return { batcher, redis, lost, fence, allow: () => (refusing = false) };
  }

  it('keeps an ack the fence refused and sends it again once the same generation is renewed', async () => {
    const { batcher, redis, lost, allow } = fencedSetup();
    redis.own('1-0');
    const answer = batcher.addAndWait('1-0');
    await batcher.drain();
    expect(lost).toEqual([]);
    expect(batcher.unsent()).toEqual(new Set(['1-0']));
    allow();
    batcher.retryRefused();
    expect(await answer).toBe(true);
    expect(redis.owned.size).toBe(0);
    expect(lost).toEqual([]);
  });

  it('reports a refused ack lost once its generation is gone (revoked, or another granted)', async () => {
    const { batcher, lost, fence } = fencedSetup();
    const answer = batcher.addAndWait('1-0');
    await batcher.drain();
    fence.revoke();
    batcher.retryRefused();
    expect(await answer).toBe(false);
    expect(lost).toEqual(['1-0']);
    expect(batcher.unsent()).toEqual(new Set());
  });
});
