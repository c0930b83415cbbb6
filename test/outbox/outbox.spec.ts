import { randomBytes } from 'node:crypto';
import { Observable, throwError } from 'rxjs';
import { RedisStreamsClient, type StreamRecord } from 'nest-redis-streams';
import { Outbox, OutboxRelay, type OutboxPublisher } from 'nest-redis-streams/database';
import { readAll, redisUrl, testContext, unique, waitFor } from '../support/helpers.js';
import { pgKind, pgliteKind, type TestDatabase, typeormKind, usePostgresServer } from '../inbox/support/databases.js';

usePostgresServer();
// Each test creates a database and starts apps; on 2 shared cores that can pass Jest's 5 s default.
jest.setTimeout(30_000);

// The same suite on a PostgreSQL 15 server (two adapters) and on embedded PGlite.
describe.each([pgKind, typeormKind, pgliteKind])('Outbox and OutboxRelay on $name', (kind) => {
  const { redis, closers } = testContext();
  let t: TestDatabase;
  let outbox: Outbox<any>;
  let client: RedisStreamsClient;
  beforeEach(async () => {
    t = await kind.open();
    outbox = new Outbox(t.db);
    client = new RedisStreamsClient({ connection: redisUrl() });
    closers.push(
      () => t.close(),
      () => client.close(),
    );
  });
  const relay = (publisher: OutboxPublisher = client, options = {}) => {
    const r = new OutboxRelay(t.db, publisher, { pollIntervalMs: 100, ...options });
    closers.push(() => r.close());
    r.start();
    return r;
  };

  it('keeps an event only when the business transaction commits, and publishes it with eventId = the outbox id, headers and partition key', async () => {
    const stream = unique('outbox');
    await expect(
      t.db.transaction(async (tx) => {
        await outbox.add(tx, stream, { id: 'o-0' });
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    const eventId = await t.db.transaction((tx) =>
      outbox.add(
        tx,
        stream,
        { id: 'o-1', amount: 5 },
        { eventId: 'order-o-1', headers: { tenant: 'acme' }, partitionKey: 'o-1' },
      ),
    );
    expect(eventId).toBe('order-o-1');
    relay();
    const [[entryId, fields]] = await waitFor(
      async () => ((await readAll(redis, stream)).length ? readAll(redis, stream) : null),
      'the event in Redis',
    );
    expect(fields).toMatchObject({ event_id: 'order-o-1', data: JSON.stringify({ id: 'o-1', amount: 5 }) });
    expect(JSON.parse(fields.headers)).toMatchObject({ tenant: 'acme' });
    await waitFor(
      async () => (await t.query('SELECT sent_at FROM nrs_outbox WHERE sent_at IS NOT NULL')).length === 1,
      'the row marked sent',
    );
    expect(await t.query('SELECT event_id, entry_id, attempts FROM nrs_outbox')).toEqual([
      { event_id: 'order-o-1', entry_id: entryId, attempts: 0 },
    ]);
  });

  it('wakes up on NOTIFY at commit without polling, and polls when LISTEN is off', async () => {
    const listening = relay(client, { pollIntervalMs: 60_000 });
    await waitFor(() => listening.status().listening && listening.status().lastRoundAt > 0, 'the relay to listen');
    const notified = unique('outbox-notify');
    await t.db.transaction((tx) => outbox.add(tx, notified, { n: 1 }));
    await waitFor(async () => (await redis.xlen(notified)) === 1, 'the event published after NOTIFY');
    await listening.close();

    const polling = relay(client, { listen: false, pollIntervalMs: 50 });
    const polled = unique('outbox-poll');
    await t.db.transaction((tx) => outbox.add(tx, polled, { n: 2 }));
    await waitFor(async () => (await redis.xlen(polled)) === 1, 'the event published by polling');
    expect(polling.status().listening).toBe(false);
  });

  it('two relays publish 600 events of 12 keys once each and in add order per key', async () => {
    const stream = unique('outbox-replicas');
    for (let i = 0; i < 600; i += 50) {
      await t.db.transaction(async (tx) => {
        for (let k = i; k < i + 50; k++)
          await outbox.add(tx, stream, { key: `k${k % 12}`, n: k }, { partitionKey: `k${k % 12}` });
      });
    }
    const publishedBy = { a: 0, b: 0 };
    const counted = (name: 'a' | 'b'): OutboxPublisher => ({
      emit: (pattern: string, record: StreamRecord) => {
        publishedBy[name] += 1;
        return client.emit(pattern, record) as Observable<unknown>;
      },
    });
    relay(counted('a'), { batchSize: 25 });
    relay(counted('b'), { batchSize: 25 });
    await waitFor(
      async () =>
        (await redis.xlen(stream)) >= 600 && (await t.query('SELECT 1 FROM nrs_outbox WHERE sent_at IS NULL')).length === 0,
      'all published',
      30_000,
    );
    const published = (await readAll(redis, stream)).map(([, f]) => JSON.parse(f.data) as { key: string; n: number });
    expect(published).toHaveLength(600);
    expect(new Set(published.map((p) => p.n)).size).toBe(600);
    expect(publishedBy.a + publishedBy.b).toBe(600);
    for (let key = 0; key < 12; key++) {
      const ns = published.filter((p) => p.key === `k${key}`).map((p) => p.n);
      expect(ns).toEqual([...ns].sort((a, b) => a - b));
    }
  });

  it('retries a failed publish with doubling back-off, keeps the error, and holds later events of its key back meanwhile', async () => {
    const stream = unique('outbox-retry');
    let failuresLeft = 2;
    const flaky: OutboxPublisher = {
      emit: (pattern: string, record: StreamRecord) =>
        record.eventId === 'a-1' && failuresLeft-- > 0
          ? throwError(() => new Error('Redis said OOM'))
          : (client.emit(pattern, record) as Observable<unknown>),
    };
    await t.db.transaction(async (tx) => {
      await outbox.add(tx, stream, 'a1', { eventId: 'a-1', partitionKey: 'a' });
      await outbox.add(tx, stream, 'a2', { eventId: 'a-2', partitionKey: 'a' });
      await outbox.add(tx, stream, 'b1', { eventId: 'b-1', partitionKey: 'b' });
    });
    const r = relay(flaky, { retryDelayMs: 100, pollIntervalMs: 20 });
    // Key b goes at once; key a waits behind its failed head.
    await waitFor(async () => (await readAll(redis, stream)).some(([, f]) => f.event_id === 'b-1'), 'key b published');
    const [head] = await t.query<{ attempts: number; last_error: string; sent_at: Date | null }>(
      `SELECT attempts, last_error, sent_at FROM nrs_outbox WHERE event_id = 'a-1'`,
    );
    expect(head.sent_at === null || head.attempts >= 1).toBe(true);
    await waitFor(async () => (await redis.xlen(stream)) === 3, 'key a published after its retries', 10_000);
    expect((await readAll(redis, stream)).map(([, f]) => f.event_id).filter((id) => id.startsWith('a-'))).toEqual(['a-1', 'a-2']);
    expect(await t.query(`SELECT attempts, last_error FROM nrs_outbox WHERE event_id = 'a-1'`)).toEqual([
      { attempts: 2, last_error: 'Error: Redis said OOM' },
    ]);
    // Redis has the entries before the relay's transaction marks them sent.
    await waitFor(
      async () => (await t.query(`SELECT 1 FROM nrs_outbox WHERE sent_at IS NULL`)).length === 0,
      'key a marked sent',
    );
    const [{ gap }] = await t.query<{ gap: number }>(
      `SELECT extract(epoch FROM sent_at - created_at)::float8 AS gap FROM nrs_outbox WHERE event_id = 'a-1'`,
    );
    // Two back-offs of 100 ms and 200 ms passed before the third attempt.
    expect(gap).toBeGreaterThanOrEqual(0.3);
    expect(r.status().lastError).toBeUndefined();
  });

  it('rejects bad input with a message naming the value and the fix, and deletes only old sent rows', async () => {
    await t.db.transaction(async (tx) => {
      await expect(outbox.add(tx, '', {})).rejects.toThrow(/Outbox stream "" is not a non-empty string/);
      await expect(outbox.add(tx, 's', undefined)).rejects.toThrow(/payload for stream "s" is undefined, which JSON cannot hold/);
      await expect(outbox.add(tx, 's', {}, { headers: { n: 1 as unknown as string } })).rejects.toThrow(
        /header "n" is number, not a string/,
      );
      const circular: Record<string, unknown> = {};
      circular.self = circular;
      for (const payload of [{ amount: 10n }, circular]) {
        const refused = await outbox.add(tx, 's', payload).catch((err: Error) => err);
        expect(refused).toMatchObject({ name: 'InvalidOptionsError' });
        expect((refused as Error).message).toMatch(
          /^Outbox payload for stream "s" cannot be written as JSON \(.+\): pass plain data \(BigInt as a string, no circular references\)\.$/,
        );
      }
      // Past what a PostgreSQL btree index entry holds (about 2,700 bytes): refused naming the field and the limit.
      const long = randomBytes(1500).toString('hex');
      for (const [field, options] of [
        ['eventId', { eventId: long }],
        ['partitionKey', { partitionKey: long }],
      ] as const) {
        const refused = await outbox.add(tx, 's', {}, options).catch((err: Error) => err);
        expect({ field, refused }).toMatchObject({ field, refused: { name: 'InvalidOptionsError' } });
        expect((refused as Error).message).toMatch(
          new RegExp(`^Outbox ${field} ".{20}…" is 3000 bytes long, over the limit of 1024 \\(PostgreSQL indexes it`),
        );
      }
      // Refused before any statement: the transaction goes on.
      await outbox.add(tx, 's', { ok: true }, { eventId: 'after-refusals' });
    });
    await t.query(`DELETE FROM nrs_outbox WHERE event_id = 'after-refusals'`);
    await t.db.transaction(async (tx) => {
      for (const id of ['old-sent', 'new-sent', 'old-unsent']) await outbox.add(tx, 's', {}, { eventId: id });
    });
    await t.query(`UPDATE nrs_outbox SET sent_at = now() - interval '40 days' WHERE event_id = 'old-sent'`);
    await t.query(`UPDATE nrs_outbox SET sent_at = now() WHERE event_id = 'new-sent'`);
    expect(await outbox.deleteSentBefore(new Date(Date.now() - 30 * 24 * 3600_000))).toBe(1);
    expect((await t.query<{ event_id: string }>('SELECT event_id FROM nrs_outbox ORDER BY seq')).map((r) => r.event_id)).toEqual([
      'new-sent',
      'old-unsent',
    ]);
  });
});
