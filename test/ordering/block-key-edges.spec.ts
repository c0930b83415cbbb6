import { DeadLetterService, StreamOperations } from 'nest-redis-streams';
import { pendingCount, readAll, testContext, unique, waitFor } from '../support/helpers.js';
import { gate, startGatedConsumer } from './block-key-gates.js';
import { blockOf, runsOf, startBlockKeyConsumer, waiting } from './block-key-support.js';

// The edges of onDeadLetter: 'block-key' a hostile review found: each test plays one through a
// running consumer against real Redis and checks the key is neither stranded nor run out of order.

describe("onDeadLetter: 'block-key' edges", () => {
  const { redis, closers } = testContext();
  const ops = () => new StreamOperations(redis);
  const add = (stream: string, k: string, n: string) => redis.xadd(stream, '*', 'k', k, 'n', n) as Promise<string>;
  const deadLetters = (stream: string) => readAll(redis, `${stream}:dlq`);
  const parkedLetter = (stream: string, key: string) =>
    waitFor(async () => {
      const block = await blockOf(redis, stream, key);
      return block?.state === 'parked' ? block.deadLetter : null;
    }, `key ${key} parked`);

  it('does not strand the key when a paused handler fails after another consumer took, ran and acked its entry', async () => {
    const stream = unique('bk-paused');
    const paused = gate();
    // No lease renewal: like a SIGSTOPped process, this consumer does not learn that it lost the entry.
    const { started, done } = await startGatedConsumer(
      closers,
      stream,
      { gates: new Map([['A:1', paused]]) },
      {},
      { leaseRenewal: false, consumer: unique('paused') },
    );
    const first = await add(stream, 'A', '1');
    await waitFor(() => started.includes('A:1'), 'A:1 running');
    await redis.xclaim(stream, 'nest', 'other', 0, first);
    await redis.xack(stream, 'nest', first);
    paused.fail(new Error('A:1 failed late'));
    await add(stream, 'A', '2');
    await waitFor(() => done.includes('A:2'), 'A:2 handled: the key was not blocked by A:1');
    expect(await blockOf(redis, stream, 'A')).toBeNull();
    expect(await waiting(redis, stream, 'A')).toBe(0);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'nothing pending');
  });

  it('refuses ctx.ack() in a block-key handler with a clear error: the blocker is retried and releases the next entry', async () => {
    const stream = unique('bk-ctx-ack');
    const plan = { failures: new Map([['A:1', 1]]), ackFirst: new Set(['A:1']) };
    const { done, ackErrors } = await startGatedConsumer(closers, stream, plan, { maxDeliveries: 5 });
    await add(stream, 'A', '1');
    await waitFor(async () => (await blockOf(redis, stream, 'A'))?.state === 'failing', 'key A failing');
    await add(stream, 'A', '2');
    await waitFor(() => done.length === 2, 'A:1 retried to success and A:2 released');
    expect(done).toEqual(['A:1', 'A:2']);
    expect(ackErrors[0]).toMatch(
      /^ctx\.ack\(\) called for entry \d+-\d+ of stream "[^"]+" in a handler with onDeadLetter: 'block-key': refused\./,
    );
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'nothing pending');
  });

  it('holds an entry delivered too often behind its blocked key instead of parking it out of line', async () => {
    const stream = unique('bk-crash-loop-behind');
    const consumer = unique('pod');
    await startBlockKeyConsumer(closers, stream, new Map([['A:1', 9]]), {}, consumer);
    await add(stream, 'A', '1');
    const letter = await parkedLetter(stream, 'A');
    await closers.pop()!();
    // Meanwhile A:2 killed a consumer again and again: past maxDeliveries (2), idle past min-idle.
    const second = await add(stream, 'A', '2');
    await redis.xreadgroup('GROUP', 'nest', 'ghost', 'COUNT', 1, 'STREAMS', stream, '>');
    await redis.xclaim(stream, 'nest', 'ghost', 0, second, 'IDLE', 5_000, 'RETRYCOUNT', 5);
    const { done } = await startBlockKeyConsumer(closers, stream, new Map(), {}, consumer);
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 1, 'A:2 held behind A:1');
    expect((await deadLetters(stream)).map(([, fields]) => fields['n'])).toEqual(['1']);
    expect(await blockOf(redis, stream, 'A')).toMatchObject({ state: 'parked', deadLetter: letter });
    await ops().redrive('tester', stream, letter);
    await waitFor(() => runsOf(done, 'A').length === 2, 'A:1 and A:2 handled');
    expect(runsOf(done, 'A')).toEqual(['A:1', 'A:2']);
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
  });

  it('parks a blocker trimmed away while it waits for its retry with its key, so discarding that dead letter releases the key', async () => {
    const stream = unique('bk-trimmed-blocker');
    const plan = { failures: new Map([['A:1', 9]]) };
    const { done } = await startGatedConsumer(closers, stream, plan, { maxDeliveries: 5 }, { retryBackoffMs: 1_000 });
    const first = await add(stream, 'A', '1');
    await waitFor(async () => (await blockOf(redis, stream, 'A'))?.state === 'failing', 'key A failing');
    await redis.xdel(stream, first);
    await add(stream, 'A', '2');
    const letter = await parkedLetter(stream, 'A');
    const [[, fields]] = await deadLetters(stream);
    expect(fields).toMatchObject({ 'dlq:id': first, 'dlq:reason': 'payload-trimmed', 'nrs:blocked_key': 'A' });
    expect(await ops().discard('tester', stream, letter)).toMatchObject({ released: { key: 'A' } });
    await waitFor(() => done.includes('A:2'), 'A:2 handled');
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
  });

  /**
   * A:1 fails `failures` times and is parked (maxDeliveries 1), A:2 and A:3 are held, the key is
   * released by hand and A:2 runs, held at its gate (`second`) until the test opens it.
   */
  async function releasedByHandWhileRunning(stream: string, failures: number) {
    const second = gate();
    const plan = { failures: new Map([['A:1', failures]]), gates: new Map([['A:2', second]]) };
    const { started, done } = await startGatedConsumer(closers, stream, plan, { maxDeliveries: 1 });
    for (const n of ['1', '2', '3']) await add(stream, 'A', n);
    const letter = await parkedLetter(stream, 'A');
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 2, 'A:2 and A:3 held');
    await ops().releaseBlockedKey('tester', stream, 'A', { group: 'nest' });
    await waitFor(() => started.includes('A:2'), 'A:2 released and running');
    return { second, done, letter };
  }

  it('after an operator release, a second release is refused while the released entry runs, and discarding the old dead letter releases nothing', async () => {
    const stream = unique('bk-release-discard');
    const { second, done, letter } = await releasedByHandWhileRunning(stream, 9);
    await expect(ops().releaseBlockedKey('tester', stream, 'A', { group: 'nest' })).rejects.toThrow(
      /Ordering key "A" of group "nest" on stream "[^"]+" is releasing: a released entry of it is running.*force: true/,
    );
    expect(await ops().discard('tester', stream, letter)).toEqual({ discarded: letter });
    expect(await waiting(redis, stream, 'A')).toBe(1);
    second.open();
    await waitFor(() => done.length === 2, 'A:2 and A:3 handled');
    expect(done).toEqual(['A:2', 'A:3']);
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
  });

  it('after an operator release, re-driving the old dead letter adds a new entry of the key, held behind the running one', async () => {
    const stream = unique('bk-release-redrive');
    const { second, done, letter } = await releasedByHandWhileRunning(stream, 1);
    await ops().redrive('tester', stream, letter);
    // Read, it waits in this process behind the running A:2; at its turn it is held behind A:3.
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 2, 'the re-driven A:1 read');
    second.open();
    await waitFor(() => done.length === 3, 'all three handled');
    expect(done).toEqual(['A:2', 'A:3', 'A:1']);
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
  });

  it('refuses to re-drive the dead letter its key waits for to another group, and allows it once the key is released', async () => {
    const stream = unique('bk-redrive-group');
    await startGatedConsumer(closers, stream, { failures: new Map([['A:1', 9]]) }, { maxDeliveries: 1 });
    await add(stream, 'A', '1');
    await add(stream, 'A', '2');
    const letter = await parkedLetter(stream, 'A');
    const service = new DeadLetterService(redis);
    await expect(service.redrive(`${stream}:dlq`, letter, { group: 'audit' })).rejects.toThrow(
      `Dead letter ${letter} in "${stream}:dlq" blocks ordering key "A" of group "nest" (onDeadLetter: 'block-key'): ` +
        're-driven to group "audit" it would leave that key blocked.',
    );
    expect(await deadLetters(stream)).toHaveLength(1);
    await ops().releaseBlockedKey('tester', stream, 'A', { group: 'nest' });
    expect(await service.redrive(`${stream}:dlq`, letter, { group: 'audit' })).toMatch(/^\d+-\d+$/);
  });
});
