import { StreamOperations } from 'nest-redis-streams';
import { type ConsoleApp, startConsoleApp } from '../console/console-app.js';
import { readAll, testContext, unique, waitFor } from '../support/helpers.js';
import { gate, startGatedConsumer } from './block-key-gates.js';
import { SLOW_RETRIES, blockOf, failingWithTwoHeld, keyFree, runsOf, waiting } from './block-key-support.js';

// An operator's ack says "this entry is done". When it is the entry a key's block waits for (the
// failing blocker, whose retry then never comes, or the re-drive of its dead letter), the ack must
// release the key as the handler's own success does, or only a forced release would ever free it.
// The operations layer does not know the handler's orderingKey: the ack script finds the block.

jest.setTimeout(60_000);

describe("onDeadLetter: 'block-key': an operator's ack of the entry a block waits for", () => {
  const { redis, closers } = testContext();
  const ops = () => new StreamOperations(redis);

  it('StreamOperations.ack of the failing blocker releases the held entries in order and frees the key', async () => {
    const stream = unique('bk-op-ack');
    const failures = new Map([['A:1', 99]]);
    const { done } = await startGatedConsumer(closers, stream, { failures }, {}, SLOW_RETRIES);
    const first = await failingWithTwoHeld(redis, stream, 'A');

    const acked = await ops().ack('tester', stream, 'nest', first);
    await waitFor(() => done.length === 2, 'the held entries handled');
    expect(acked).toEqual({ acked: first, released: { key: 'A', released: expect.any(String) } });
    expect(done).toEqual(['A:2', 'A:3']);
    await keyFree(redis, stream, 'A');
    expect(await readAll(redis, `${stream}:dlq`)).toEqual([]);
  });

  it('the console ack of a blocker releases its key (an empty key too); a second ack is refused', async () => {
    const stream = unique('bk-op-ack-console');
    const failures = new Map([
      [':1', 99],
      ['B:1', 99],
    ]);
    const { done } = await startGatedConsumer(closers, stream, { failures }, {}, SLOW_RETRIES);
    const web: ConsoleApp = await startConsoleApp({ streams: [stream], auditStream: unique('audit'), guard: () => 'alice' });
    closers.push(() => web.app.close());
    const [firstEmpty, firstB] = [await failingWithTwoHeld(redis, stream, ''), await failingWithTwoHeld(redis, stream, 'B')];

    const ackEmpty = await web.post('ack', { stream, group: 'nest', id: firstEmpty });
    expect(ackEmpty.status).toBe(200);
    await waitFor(() => runsOf(done, '').length === 2, ':2 and :3 handled');
    expect(ackEmpty.body.released).toMatchObject({ key: '' });
    expect(runsOf(done, '')).toEqual([':2', ':3']);
    await waitFor(async () => (await blockOf(redis, stream, '')) === null, 'the empty key free');
    // B stays blocked: the ack released only the key that waited for the acked entry.
    expect(await blockOf(redis, stream, 'B')).toMatchObject({ state: 'failing', entry: firstB });
    expect(await waiting(redis, stream, 'B')).toBe(2);

    const again = await web.post('ack', { stream, group: 'nest', id: firstEmpty });
    expect(again.status).toBe(404);
    const ackB = await web.post('ack', { stream, group: 'nest', id: firstB });
    expect([ackB.status, ackB.body.released?.key]).toEqual([200, 'B']);
    await waitFor(() => runsOf(done, 'B').length === 2, 'B:2 and B:3 handled');
    expect(runsOf(done, 'B')).toEqual(['B:2', 'B:3']);
    await keyFree(redis, stream, 'B');
  });

  it('the re-drive of a parked blocker, acked while it runs, releases the key; parked while it runs, its discard does', async () => {
    const stream = unique('bk-op-ack-redriven');
    const [runA, runB] = [gate(), gate()];
    const failures = new Map([
      ['A:1', 99],
      ['B:1', 99],
    ]);
    const gates = new Map<string, ReturnType<typeof gate>>();
    // Two slots: both re-drives run at once.
    const { started, done } = await startGatedConsumer(closers, stream, { failures, gates }, { concurrency: 2 }, SLOW_RETRIES);
    const [firstA, firstB] = [await failingWithTwoHeld(redis, stream, 'A'), await failingWithTwoHeld(redis, stream, 'B')];
    const parkedA = await ops().park('tester', stream, 'nest', firstA);
    const parkedB = await ops().park('tester', stream, 'nest', firstB);
    // The re-drives run and wait at their gates: pending, while the blocks are still `parked`.
    gates.set('A:1', runA);
    gates.set('B:1', runB);
    const { newId: copyA } = await ops().redrive('tester', stream, parkedA.deadLetterId);
    const { newId: copyB } = await ops().redrive('tester', stream, parkedB.deadLetterId);
    await waitFor(() => started.filter((s) => s === 'A:1' || s === 'B:1').length === 4, 'both re-drives running');
    expect(await blockOf(redis, stream, 'A')).toMatchObject({ state: 'parked', deadLetter: parkedA.deadLetterId });

    const ackA = await ops().ack('tester', stream, 'nest', copyA);
    const { deadLetterId } = await ops().park('tester', stream, 'nest', copyB);
    const [letter] = await redis.xrange(`${stream}:dlq`, deadLetterId, deadLetterId);
    expect(letter[1]).toEqual(expect.arrayContaining(['nrs:blocked_key', 'B', 'dlq:id', copyB]));
    expect(await blockOf(redis, stream, 'B')).toMatchObject({ state: 'parked', entry: copyB, deadLetter: deadLetterId });
    await ops().discard('tester', stream, deadLetterId);
    runA.open();
    runB.open();
    await waitFor(() => runsOf(done, 'A').length >= 2 && runsOf(done, 'B').length === 2, 'the held entries handled');
    expect(ackA).toMatchObject({ released: { key: 'A' } });
    expect(runsOf(done, 'A').filter((name) => name !== 'A:1')).toEqual(['A:2', 'A:3']);
    expect(runsOf(done, 'B')).toEqual(['B:2', 'B:3']);
    await keyFree(redis, stream, 'A');
    await keyFree(redis, stream, 'B');
  });
});
