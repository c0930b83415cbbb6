import { StreamOperations } from 'nest-redis-streams';
import { type ConsoleApp, startConsoleApp } from '../console/console-app.js';
import { runCli } from '../cli/run-cli.js';
import { readAll, testContext, unique, waitFor } from '../support/helpers.js';
import { gate, startGatedConsumer } from './block-key-gates.js';
import { SLOW_RETRIES, blockOf, failingWithTwoHeld, keyFree, runsOf, waiting } from './block-key-support.js';

// An operator may send the entry a key's block waits for to the dead-letter stream by hand
// (StreamOperations.park, the console): its dead letter must become the block's blocker as the
// consumer's own park makes it, so that its re-drive passes the block (the API, the console, the
// CLI) and its discard releases the key, not only a forced release.

// The CLI is spawned (a start can take seconds on a busy machine).
jest.setTimeout(120_000);

describe("onDeadLetter: 'block-key': an operator's park of the blocker", () => {
  const { redis, closers } = testContext();
  const ops = () => new StreamOperations(redis);
  const add = (stream: string, k: string, n: string) => redis.xadd(stream, '*', 'k', k, 'n', n) as Promise<string>;

  /** The block now waits for the operator's dead letter, which names the key. */
  async function expectParkedOn(stream: string, key: string, entry: string, deadLetterId: string) {
    expect(await blockOf(redis, stream, key)).toMatchObject({ state: 'parked', entry, deadLetter: deadLetterId });
    const [letter] = await redis.xrange(`${stream}:dlq`, deadLetterId, deadLetterId);
    expect(letter[1]).toEqual(
      expect.arrayContaining(['nrs:blocked_key', key, 'dlq:error_class', 'ParkedByOperator', 'dlq:id', entry]),
    );
  }

  it('StreamOperations.park: the block waits for the new dead letter, whose re-drive passes it and releases the held entries in order', async () => {
    const stream = unique('bk-op-park');
    const failures = new Map([['A:1', 99]]);
    const { done } = await startGatedConsumer(closers, stream, { failures }, {}, SLOW_RETRIES);
    const first = await failingWithTwoHeld(redis, stream, 'A');

    const { deadLetterId } = await ops().park('tester', stream, 'nest', first);
    await expectParkedOn(stream, 'A', first, deadLetterId);
    failures.set('A:1', 0);
    await ops().redrive('tester', stream, deadLetterId);
    await waitFor(() => done.length === 3, 'the re-drive and the held entries handled');
    expect(done).toEqual(['A:1', 'A:2', 'A:3']);
    await keyFree(redis, stream, 'A');
  });

  it('the console park: re-driven with the CLI the key goes on in order; discarded with the CLI it is released', async () => {
    const stream = unique('bk-op-console');
    const failures = new Map([
      ['A:1', 99],
      ['B:1', 99],
    ]);
    const { done } = await startGatedConsumer(closers, stream, { failures }, {}, SLOW_RETRIES);
    const web: ConsoleApp = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'alice' });
    closers.push(() => web.app.close());
    const [firstA, firstB] = [await failingWithTwoHeld(redis, stream, 'A'), await failingWithTwoHeld(redis, stream, 'B')];

    const parkedA = await web.post('park', { stream, group: 'nest', id: firstA });
    const parkedB = await web.post('park', { stream, group: 'nest', id: firstB });
    await expectParkedOn(stream, 'A', firstA, parkedA.body.deadLetterId);
    await expectParkedOn(stream, 'B', firstB, parkedB.body.deadLetterId);

    failures.set('A:1', 0);
    const redrive = await runCli(['dlq', 'redrive', stream, parkedA.body.deadLetterId]);
    expect([redrive.code, redrive.stderr]).toEqual([0, '']);
    const discard = await runCli(['dlq', 'discard', stream, parkedB.body.deadLetterId]);
    expect([discard.code, discard.stderr]).toEqual([0, '']);
    await waitFor(() => done.length === 5, 'A:1..3, B:2 and B:3 handled');
    expect(runsOf(done, 'A')).toEqual(['A:1', 'A:2', 'A:3']);
    expect(runsOf(done, 'B')).toEqual(['B:2', 'B:3']);
    await keyFree(redis, stream, 'A');
    await keyFree(redis, stream, 'B');
    expect(await readAll(redis, `${stream}:dlq`)).toEqual([]);
  });

  it('parking a released entry while it runs: the block waits for its dead letter, whose re-drive releases the rest', async () => {
    const stream = unique('bk-op-released');
    const second = gate();
    const plan = { failures: new Map([['A:1', 9]]), gates: new Map([['A:2', second]]) };
    const { started, done } = await startGatedConsumer(closers, stream, plan, { maxDeliveries: 1 });
    for (const n of ['1', '2', '3']) await add(stream, 'A', n);
    await waitFor(async () => (await blockOf(redis, stream, 'A'))?.state === 'parked', 'A:1 parked');
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 2, 'A:2 and A:3 held');
    const { released } = await ops().releaseBlockedKey('tester', stream, 'A', { group: 'nest' });
    await waitFor(() => started.includes('A:2'), 'the released A:2 running');

    const { deadLetterId } = await ops().park('tester', stream, 'nest', released!);
    await expectParkedOn(stream, 'A', released!, deadLetterId);
    // Its run ends after the park: its ack finds it gone and releases nothing.
    second.open();
    await waitFor(() => done.includes('A:2'), 'the first run of A:2 done');
    expect(await waiting(redis, stream, 'A')).toBe(1);
    await ops().redrive('tester', stream, deadLetterId);
    await waitFor(() => done.length === 3, 'the re-driven A:2 and A:3 handled');
    expect(done).toEqual(['A:2', 'A:2', 'A:3']);
    await keyFree(redis, stream, 'A');
  });
});
