import type { MessageHandler } from '@nestjs/microservices';
import { DeadLetterService, RedisStreamsServer, StreamOperations } from 'nest-redis-streams';
import { heldEntriesKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { pendingCount, readAll, redisUrl, testContext, unique, waitFor } from '../support/helpers.js';
import { blockOf, runsOf, startBlockKeyConsumer, waiting } from './block-key-support.js';

describe("onDeadLetter: 'block-key'", () => {
  const { redis, closers } = testContext();
  const ops = () => new StreamOperations(redis);
  const add = (stream: string, k: string, n: string) => redis.xadd(stream, '*', 'k', k, 'n', n) as Promise<string>;
  const deadLetters = (stream: string) => readAll(redis, `${stream}:dlq`);

  it('holds the later entries of a parked key out of the PEL, lets other keys run, and runs them in order after the re-drive', async () => {
    const stream = unique('block-key');
    const failures = new Map([['A:1', 2]]);
    const { done } = await startBlockKeyConsumer(closers, stream, failures);
    const first = await add(stream, 'A', '1');
    for (const [k, n] of [
      ['A', '2'],
      ['B', '1'],
      ['A', '3'],
      ['B', '2'],
    ])
      await add(stream, k, n);
    await waitFor(() => runsOf(done, 'B').length === 2, 'key B handled');
    const [[deadLetterId, letter]] = await waitFor(async () => {
      const letters = await deadLetters(stream);
      return letters.length === 1 ? letters : null;
    }, 'A:1 parked');
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 2, 'A:2 and A:3 held');
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
    expect(letter['nrs:blocked_key']).toBe('A');
    expect(await blockOf(redis, stream, 'A')).toMatchObject({
      entry: first,
      state: 'parked',
      deadLetter: deadLetterId,
      deadLetterStream: `${stream}:dlq`,
      current: '',
    });
    // Held behind the block, a new entry of the key waits too.
    await add(stream, 'A', '4');
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 3, 'A:4 held');
    expect(runsOf(done, 'A')).toEqual([]);
    // What the console, the CLI and the gauges read (operations/blocked-keys.ts) is this block.
    expect(await ops().blockedKeys(stream)).toEqual([
      expect.objectContaining({
        stream,
        group: 'nest',
        key: 'A',
        state: 'parked',
        blockingEntry: first,
        deadLetter: deadLetterId,
        waiting: 3,
      }),
    ]);

    await ops().redrive('tester', stream, deadLetterId);
    await waitFor(() => runsOf(done, 'A').length === 4, 'the re-drive and the held entries handled');
    expect(runsOf(done, 'A')).toEqual(['A:1', 'A:2', 'A:3', 'A:4']);
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
    expect(await ops().blockedKeys(stream)).toEqual([]);
    expect(await redis.exists(heldEntriesKey(stream, 'nest', 'A'))).toBe(0);
    await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'all acked');
  });

  it('keeps the order while the first failure is still being retried', async () => {
    const stream = unique('block-key-retry');
    const failures = new Map([['A:1', 2]]);
    const { done } = await startBlockKeyConsumer(closers, stream, failures, { maxDeliveries: 5 });
    const first = await add(stream, 'A', '1');
    await waitFor(async () => (await blockOf(redis, stream, 'A'))?.state === 'failing', 'key A failing');
    expect((await blockOf(redis, stream, 'A'))?.entry).toBe(first);
    await add(stream, 'A', '2');
    await waitFor(() => runsOf(done, 'A').length === 2, 'A:1 retried to success and A:2 released');
    expect(runsOf(done, 'A')).toEqual(['A:1', 'A:2']);
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
    expect(await deadLetters(stream)).toEqual([]);
  });

  it('keeps a RetryLater longer than min-idle in the PEL as the blocker: the key waits for it', async () => {
    const stream = unique('block-key-retry-later');
    const { done } = await startBlockKeyConsumer(closers, stream, new Map([['A:1', 1]]));
    const first = (await redis.xadd(stream, '*', 'k', 'A', 'n', '1', 'later', '60000'))!;
    await waitFor(async () => (await blockOf(redis, stream, 'A'))?.state === 'failing', 'key A failing');
    await add(stream, 'A', '2');
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 1, 'A:2 held');
    // Not moved to the stream's schedule (its copy would be a new entry held behind its own key).
    expect(await redis.xpending(stream, 'nest', '-', '+', 10)).toEqual([[first, expect.any(String), expect.any(Number), 0]]);
    await waitFor(() => runsOf(done, 'A').length === 2, 'A:1 retried after min-idle and A:2 released');
    expect(runsOf(done, 'A')).toEqual(['A:1', 'A:2']);
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
  });

  it('releases the key when its blocking dead letter is discarded (operations or DeadLetterService), and the held entries run without it', async () => {
    const stream = unique('block-key-discard');
    const failures = new Map([
      ['A:1', 9],
      ['B:1', 9],
    ]);
    const { done } = await startBlockKeyConsumer(closers, stream, failures, { maxDeliveries: 1 });
    for (const [k, n] of [
      ['A', '1'],
      ['B', '1'],
      ['A', '2'],
      ['B', '2'],
    ])
      await add(stream, k, n);
    const letterOf = (key: string) => waitFor(async () => (await blockOf(redis, stream, key))?.deadLetter, `${key}:1 parked`);
    const [letterA, letterB] = [await letterOf('A'), await letterOf('B')];
    await waitFor(
      async () => (await waiting(redis, stream, 'A')) + (await waiting(redis, stream, 'B')) === 2,
      'A:2 and B:2 held',
    );
    expect(await ops().discard('tester', stream, letterA)).toEqual({
      discarded: letterA,
      released: { key: 'A', released: expect.any(String) },
    });
    expect(await new DeadLetterService(redis).discard(`${stream}:dlq`, letterB)).toBe(true);
    await waitFor(() => done.length === 2, 'A:2 and B:2 handled');
    expect([...done].sort()).toEqual(['A:2', 'B:2']);
    await waitFor(async () => (await redis.hlen(`{${stream}}:nrs-blocked:nest`)) === 0, 'both keys free');
    expect(await deadLetters(stream)).toEqual([]);
  });

  it('blocks the key again when a released entry fails, and goes on after its own re-drive', async () => {
    const stream = unique('block-key-again');
    const failures = new Map([
      ['A:1', 2],
      ['A:2', 2],
    ]);
    const { done } = await startBlockKeyConsumer(closers, stream, failures);
    for (const n of ['1', '2', '3']) await add(stream, 'A', n);
    const firstLetter = await waitFor(async () => (await blockOf(redis, stream, 'A'))?.deadLetter, 'A:1 parked');
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 2, 'A:2 and A:3 held');
    await ops().redrive('tester', stream, firstLetter);
    // A:1 succeeds now; its released successor A:2 fails twice and blocks the key in its place.
    const second = await waitFor(async () => {
      const block = await blockOf(redis, stream, 'A');
      return block?.state === 'parked' && block.deadLetter !== firstLetter ? block : null;
    }, 'A:2 parked');
    const [[, letter]] = await deadLetters(stream);
    expect(letter).toMatchObject({ 'nrs:blocked_key': 'A', 'dlq:id': second.entry, n: '2' });
    expect(await waiting(redis, stream, 'A')).toBe(1);
    expect(runsOf(done, 'A')).toEqual(['A:1']);
    await ops().redrive('tester', stream, second.deadLetter);
    await waitFor(() => runsOf(done, 'A').length === 3, 'A:2 and A:3 handled');
    expect(runsOf(done, 'A')).toEqual(['A:1', 'A:2', 'A:3']);
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
  });

  it('keeps the block across a restart: entries arriving meanwhile wait behind it', async () => {
    const stream = unique('block-key-restart');
    const consumer = unique('pod');
    const before = await startBlockKeyConsumer(closers, stream, new Map([['A:1', 9]]), {}, consumer);
    await add(stream, 'A', '1');
    await add(stream, 'A', '2');
    const deadLetterId = await waitFor(async () => (await blockOf(redis, stream, 'A'))?.deadLetter, 'A:1 parked');
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 1, 'A:2 held');
    await closers.pop()!();
    await add(stream, 'A', '3');
    const after = await startBlockKeyConsumer(closers, stream, new Map(), {}, consumer);
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 2, 'A:3 held by the restarted consumer');
    expect(await pendingCount(redis, stream, 'nest')).toBe(0);
    await ops().redrive('tester', stream, deadLetterId);
    await waitFor(() => runsOf(after.done, 'A').length === 3, 'all of key A handled');
    expect(runsOf(after.done, 'A')).toEqual(['A:1', 'A:2', 'A:3']);
    expect(before.done).toEqual([]);
  });

  it('blocks the key of an entry parked before it runs (delivered too often, as by a crash loop)', async () => {
    const stream = unique('block-key-crash-loop');
    await redis.xgroup('CREATE', stream, 'nest', '0', 'MKSTREAM');
    const first = await add(stream, 'A', '1');
    // A consumer that died with it, again and again: five deliveries, idle past min-idle.
    await redis.xreadgroup('GROUP', 'nest', 'ghost', 'COUNT', 1, 'STREAMS', stream, '>');
    await redis.xclaim(stream, 'nest', 'ghost', 0, first, 'IDLE', 5_000, 'RETRYCOUNT', 5);
    const { done } = await startBlockKeyConsumer(closers, stream, new Map());
    const block = await waitFor(async () => (await blockOf(redis, stream, 'A'))?.deadLetter, 'A:1 parked unrun', 4_000);
    await add(stream, 'A', '2');
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 1, 'A:2 held');
    expect(await blockOf(redis, stream, 'A')).toMatchObject({ entry: first, state: 'parked' });
    expect(runsOf(done, 'A')).toEqual([]);
    await ops().redrive('tester', stream, block);
    await waitFor(() => runsOf(done, 'A').length === 2, 'A:1 and A:2 handled');
    expect(runsOf(done, 'A')).toEqual(['A:1', 'A:2']);
  });

  it('releases a key by hand (audited), leaving its dead letter where it is', async () => {
    const stream = unique('block-key-release');
    const { done } = await startBlockKeyConsumer(closers, stream, new Map([['A:1', 9]]), { maxDeliveries: 1 });
    await add(stream, 'A', '1');
    await add(stream, 'A', '2');
    await waitFor(async () => (await waiting(redis, stream, 'A')) === 1, 'A:2 held');
    const operations = ops();
    await expect(operations.releaseBlockedKey('tester', stream, 'Z', { group: 'nest' })).rejects.toThrow(
      /Ordering key "Z" is not blocked in group "nest"/,
    );
    const released = await operations.releaseBlockedKey('tester', stream, 'A', { group: 'nest' });
    expect(released).toMatchObject({ key: 'A', released: expect.stringMatching(/^\d+-\d+$/) });
    await waitFor(() => runsOf(done, 'A').length === 1, 'A:2 handled');
    await waitFor(async () => (await blockOf(redis, stream, 'A')) === null, 'key A free');
    expect(await deadLetters(stream)).toHaveLength(1);
    const { items } = await operations.auditTrail(5);
    expect(items.find((r) => r.action === 'blocked-key.release' && r.target === 'A')).toBeDefined();
  });

  it('refuses block-key on a request handler at start-up: a held request would outlive its caller', async () => {
    const stream = unique('block-key-request');
    const server = new RedisStreamsServer({ connection: redisUrl(), reclaimIntervalMs: 0 });
    closers.push(() => server.close());
    const options = { orderingKey: 'k', onDeadLetter: 'block-key' as const };
    server.addHandler(stream, (() => undefined) as unknown as MessageHandler, false, options);
    const started = new Promise<void>((resolve, reject) => void server.listen((err) => (err ? reject(err) : resolve())));
    await expect(started).rejects.toThrow(`A @MessagePattern handler of stream "${stream}" has onDeadLetter: 'block-key'`);
  });

  it('refuses block-key without an orderingKey at start-up, naming the stream and the fix', async () => {
    const stream = unique('block-key-refused');
    const server = new RedisStreamsServer({ connection: redisUrl(), reclaimIntervalMs: 0 });
    closers.push(() => server.close());
    server.addHandler(stream, (() => undefined) as unknown as MessageHandler, true, { onDeadLetter: 'block-key' });
    const started = new Promise<void>((resolve, reject) => void server.listen((err) => (err ? reject(err) : resolve())));
    await expect(started).rejects.toThrow(`Option onDeadLetter: 'block-key' for stream "${stream}" needs an orderingKey`);
  });
});
