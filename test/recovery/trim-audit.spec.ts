import { Controller } from '@nestjs/common';
import { Ctx, EventPattern } from '@nestjs/microservices';
import { type RedisStreamsContext, type RedisStreamsServer, type StreamHandlerOptions } from 'nest-redis-streams';
import { partitionStream, slotOf, trimAuditKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { pendingCount, readAll, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

const ROUNDS = 10;

/** Entries trimmed before their group read them: one tombstone per loss, per source stream and group. */
describe('trim audit', () => {
  const { redis, closers } = testContext();

  /** One controller with a handler per (pattern, options); records the stream of every entry handled. */
  function handlers(patterns: Array<[string, StreamHandlerOptions]>, handled: string[]) {
    @Controller()
    class Handlers {}
    patterns.forEach(([pattern, options], i) => {
      const method = `handle${i}`;
      Object.defineProperty(Handlers.prototype, method, {
        value: (ctx: RedisStreamsContext) => void handled.push(ctx.getStream()),
        writable: true,
        configurable: true,
      });
      Ctx()(Handlers.prototype, method, 0);
      EventPattern(pattern, options)(Handlers.prototype, method, Object.getOwnPropertyDescriptor(Handlers.prototype, method)!);
    });
    return Handlers;
  }

  /** Starts a consumer; `reported` collects its dead-letter events from before its first read. */
  async function start(
    patterns: Array<[string, StreamHandlerOptions]>,
    handled: string[],
    reported: Array<[string, number]> = [],
  ): Promise<RedisStreamsServer> {
    const { app, server } = await startMicroservice(
      [handlers(patterns, handled)],
      { consumer: 'a', reclaimIntervalMs: 0 },
      [],
      true,
      [],
      (s) => s.events.on('dead-lettered', (e) => reported.push([e.stream, e.count])),
    );
    closers.push(() => app.close());
    return server;
  }

  /** Creates the groups the way the transport does, then leaves every consumer down. */
  async function createGroups(patterns: Array<[string, StreamHandlerOptions]>): Promise<void> {
    const { app } = await startMicroservice([handlers(patterns, [])], { consumer: 'a', reclaimIntervalMs: 0 });
    await app.close();
  }

  async function add(stream: string, count: number): Promise<void> {
    for (let i = 0; i < count; i++) await redis.xadd(stream, '*', 'i', String(i));
  }

  it.each([
    {
      kind: 'two streams',
      arrange: (dlq: string) => {
        const [lossy, other] = [unique('shared-a'), unique('shared-b')];
        return {
          lossy,
          other,
          patterns: [
            [lossy, { deadLetterStream: dlq }],
            [other, { deadLetterStream: dlq }],
          ] as Array<[string, StreamHandlerOptions]>,
        };
      },
    },
    {
      kind: 'two partitions of one stream',
      arrange: (dlq: string) => {
        const base = unique('shared-p');
        const patterns: Array<[string, StreamHandlerOptions]> = [[base, { partitions: 2, deadLetterStream: dlq }]];
        return { lossy: partitionStream(base, 0), other: partitionStream(base, 1), patterns };
      },
    },
  ])('$kind sharing one dead-letter stream: one loss of 5 is one tombstone over many rounds', async ({ arrange }) => {
    const dlq = unique('shared-dlq');
    const { lossy, other, patterns } = arrange(dlq);
    await createGroups(patterns);
    // While every consumer is down, a plain MAXLEN trims 5 unread entries of one stream; the
    // other stream loses nothing and is read less, so their remembered counters differ.
    await add(lossy, 10);
    await redis.xtrim(lossy, 'MAXLEN', 5);
    await add(other, 3);
    const handled: string[] = [];
    const reported: Array<[string, number]> = [];
    const server = await start(patterns, handled, reported);
    await waitFor(
      async () =>
        handled.length === 8 && (await pendingCount(redis, lossy, 'nest')) + (await pendingCount(redis, other, 'nest')) === 0,
      'the 8 entries left, acked',
    );
    for (let round = 0; round < ROUNDS; round++) await server.reclaimNow();
    const letters = await readAll(redis, dlq);
    expect(letters.map(([, f]) => [f['dlq:reason'], f['dlq:stream'], f['dlq:group'], f['dlq:lost_count']])).toEqual([
      ['trimmed-undelivered', lossy, 'nest', '5'],
    ]);
    expect(reported).toEqual([[lossy, 5]]);
  });

  it('keeps its hash in the slot of the stream, tagged or not', () => {
    for (const stream of ['orders', 'orders:{orders:3}', '{orders}', 'a:{tag}:b']) {
      expect(slotOf(trimAuditKey(stream))).toBe(slotOf(stream));
    }
    expect(trimAuditKey('orders')).toBe('{orders}:trim-audit');
    expect(trimAuditKey('orders:{orders:3}')).toBe('orders:{orders:3}:trim-audit');
  });

  it('does not report again a loss that an earlier version recorded in its hash beside the dead-letter stream', async () => {
    const stream = unique('audit-upgrade');
    const patterns: Array<[string, StreamHandlerOptions]> = [[stream, {}]];
    await createGroups(patterns);
    await add(stream, 10);
    await redis.xtrim(stream, 'MAXLEN', 5);
    // What the previous version left after reporting this loss of 5 (its hash, keyed by the dead-letter stream).
    await redis.hset(`${stream}:dlq:trim-audit`, 'nest', '5', 'nest:read', '0');
    const handled: string[] = [];
    let server = await start(patterns, handled);
    await waitFor(
      async () => handled.length === 5 && (await pendingCount(redis, stream, 'nest')) === 0,
      'the 5 entries left, acked',
    );
    for (let round = 0; round < 3; round++) await server.reclaimNow();
    expect(await redis.xlen(`${stream}:dlq`)).toBe(0);
    // A loss after the upgrade is reported, with its own count only.
    await closers.pop()!();
    await add(stream, 10);
    await redis.xtrim(stream, 'MAXLEN', 5); // 5 already read and 5 unread entries go
    server = await start(patterns, handled);
    await waitFor(
      async () => handled.length === 10 && (await pendingCount(redis, stream, 'nest')) === 0,
      'the 5 new entries left, acked',
    );
    for (let round = 0; round < 3; round++) await server.reclaimNow();
    const letters = await readAll(redis, `${stream}:dlq`);
    expect(letters.map(([, f]) => [f['dlq:reason'], f['dlq:lost_count']])).toEqual([['trimmed-undelivered', '5']]);
  });

  it('counts a loss trimmed while the consumer waited for a free slot, before its next read crosses it', async () => {
    const stream = unique('audit-busy');
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const handled: string[] = [];
    @Controller()
    class Busy {
      @EventPattern(stream, { concurrency: 1, prefetchCount: 1 })
      async handle(@Ctx() ctx: RedisStreamsContext) {
        handled.push(ctx.getEntryId());
        if (handled.length === 1) await released;
      }
    }
    const reported: number[] = [];
    const { app, server } = await startMicroservice([Busy], { consumer: 'a', reclaimIntervalMs: 0 }, [], true, [], (s) =>
      s.events.on('dead-lettered', (e) => reported.push(e.count)),
    );
    closers.push(() => app.close());
    await add(stream, 1);
    await waitFor(() => handled.length === 1, 'the first entry in its handler (no free slot left)');
    // While the read loop waits for the slot, 10 entries come and a plain MAXLEN trims 6 of them
    // unread (and the one in the handler). Where the server forgets such a gap once read past, only
    // the audit before the next read can count it: no reclaim round runs before that read.
    await add(stream, 10);
    await redis.xtrim(stream, 'MAXLEN', 4);
    release();
    await waitFor(async () => handled.length === 5 && (await pendingCount(redis, stream, 'nest')) === 0, 'the 4 left, acked');
    // Redis 7.0 keeps the gap in its counters: its rounds count it; later rounds add nothing anywhere.
    for (let round = 0; round < 3; round++) await server.reclaimNow();
    const letters = await readAll(redis, `${stream}:dlq`);
    expect(letters.map(([, f]) => [f['dlq:reason'], f['dlq:lost_count']])).toEqual([['trimmed-undelivered', '6']]);
    expect(reported).toEqual([6]);
  });
});
