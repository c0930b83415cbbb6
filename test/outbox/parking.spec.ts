import { Registry } from 'prom-client';
import { RedisStreamsClient } from 'nest-redis-streams';
import {
  attachOutboxMetrics,
  Outbox,
  OutboxEventRefusedError,
  OutboxRelay,
  type OutboxRelayOptions,
} from 'nest-redis-streams/database';
import { readAll, redisUrl, testContext, unique, waitFor } from '../support/helpers.js';
import { pgKind, pgliteKind, type TestDatabase, usePostgresServer } from '../inbox/support/databases.js';

usePostgresServer();
// Each test creates a database and starts a relay; on 2 shared cores that can pass Jest's 5 s default.
jest.setTimeout(30_000);

type Row = { event_id: string; attempts: number; last_error: string | null; sent_at: Date | null; parked_at?: Date | null };

// Issue 24 item 1: a failing key waits alone; events that can never be published are parked.
describe.each([pgKind, pgliteKind])('Outbox relay with an unpublishable event, on $name', (kind) => {
  const { redis, closers } = testContext();
  let t: TestDatabase;
  beforeEach(async () => {
    t = await kind.open();
    closers.push(() => t.close());
  });
  const clientWith = (options: ConstructorParameters<typeof RedisStreamsClient>[0] = {}) => {
    const client = new RedisStreamsClient({ connection: redisUrl(), ...options });
    closers.push(() => client.close());
    return client;
  };
  const relayOn = (client: RedisStreamsClient, options: OutboxRelayOptions = {}) => {
    const relay = new OutboxRelay(t.db, client, { pollIntervalMs: 50, retryDelayMs: 100, ...options });
    closers.push(() => relay.close());
    return relay;
  };
  const row = async (eventId: string) =>
    (
      await t.query<Row>('SELECT event_id, attempts, last_error, sent_at, parked_at FROM nrs_outbox WHERE event_id = $1', [
        eventId,
      ])
    )[0];
  const publishedIds = async (stream: string) => (await readAll(redis, stream)).map(([, f]) => f.event_id);

  it("an event over the client's maxPayloadBytes, followed by more than a batch of its key, delays only its key and is parked", async () => {
    const stream = unique('outbox-oversize');
    // Added by a producer whose limit was larger (or before the relay's client lowered it).
    const outbox = new Outbox(t.db);
    await t.db.transaction(async (tx) => {
      await outbox.add(tx, stream, { blob: 'x'.repeat(4000) }, { eventId: 'a-big', partitionKey: 'a' });
      for (let i = 0; i < 25; i++) await outbox.add(tx, stream, { i }, { eventId: `a-${i}`, partitionKey: 'a' });
      await outbox.add(tx, stream, { b: 1 }, { eventId: 'b-1', partitionKey: 'b' });
    });
    const registry = new Registry();
    const relay = relayOn(clientWith({ maxPayloadBytes: 1000 }), { batchSize: 10 });
    attachOutboxMetrics(relay, { registry });
    relay.start();
    await waitFor(async () => (await publishedIds(stream)).includes('b-1'), 'key b published while key a is stuck', 10_000);
    await waitFor(async () => (await row('a-big')).parked_at, 'the oversize event parked');
    // b-1 is marked sent by the commit after its XADD: wait for it before reading the backlog.
    await waitFor(async () => (await row('b-1')).sent_at, 'b-1 marked sent');
    const parked = await row('a-big');
    expect(parked).toMatchObject({ attempts: 1, sent_at: null });
    expect(parked.last_error).toMatch(
      /^PayloadTooLargeError: The entry for stream ".*" is \d+ bytes, over maxPayloadBytes \(1000\)/,
    );
    // Later events of key a wait behind it (per-key order), visibly.
    expect(await publishedIds(stream)).toEqual(['b-1']);
    expect(await outbox.listParked({ stream })).toEqual([
      expect.objectContaining({ eventId: 'a-big', stream, partitionKey: 'a', attempts: 1, waiting: 25 }),
    ]);
    const metrics = await registry.metrics();
    expect(metrics).toContain(`redis_streams_outbox_parked_events{stream="${stream}"} 1`);
    expect(metrics).toContain('redis_streams_outbox_backlog 25');
    expect(metrics).toContain('redis_streams_outbox_publish_failures_total 0');
    // A parked event is never retried on its own.
    await relay.round();
    expect((await row('a-big')).attempts).toBe(1);

    // The operator's way out: discard it, and key a goes on in order.
    expect(await outbox.discardParked(['a-big', 'not-parked'])).toEqual(['a-big']);
    await waitFor(async () => (await redis.xlen(stream)) === 26, 'key a published after the discard');
    expect(await publishedIds(stream)).toEqual(['b-1', ...Array.from({ length: 25 }, (_, i) => `a-${i}`)]);
    expect(await outbox.listParked()).toEqual([]);
    expect(await registry.metrics()).not.toContain('redis_streams_outbox_parked_events{');
  });

  it('a key that fails for a while (retrying) never fills the batch either: other keys go at once', async () => {
    const stream = unique('outbox-retrying');
    const outbox = new Outbox(t.db);
    await t.db.transaction(async (tx) => {
      for (let i = 0; i < 30; i++) await outbox.add(tx, stream, { i }, { eventId: `a-${i}`, partitionKey: 'a' });
      await outbox.add(tx, stream, { b: 1 }, { eventId: 'b-1', partitionKey: 'b' });
    });
    // The head of key a failed once and waits a minute for its retry.
    await t.query(
      `UPDATE nrs_outbox SET attempts = 1, next_attempt_at = now() + interval '1 minute', last_error = 'Error: OOM' WHERE event_id = 'a-0'`,
    );
    const relay = relayOn(clientWith(), { batchSize: 10 });
    const result = await relay.round();
    expect(result).toMatchObject({ published: 1, deferred: 0 });
    expect(await publishedIds(stream)).toEqual(['b-1']);
  });

  it('parks events whose target key is not a stream (WRONGTYPE) and re-publishes them once the key is fixed', async () => {
    const stream = unique('outbox-wrongtype');
    await redis.hset(stream, 'not', 'a stream');
    const outbox = new Outbox(t.db);
    await t.db.transaction(async (tx) => {
      await outbox.add(tx, stream, { n: 1 }, { eventId: 'w-1', partitionKey: 'w' });
      await outbox.add(tx, stream, { n: 2 }, { eventId: 'w-2', partitionKey: 'w' });
      await outbox.add(tx, stream, { n: 3 }, { eventId: 'w-3' });
    });
    const relay = relayOn(clientWith());
    relay.start();
    await waitFor(async () => (await outbox.listParked()).length === 2, 'the key head and the unkeyed event parked');
    const parked = await outbox.listParked();
    expect(parked.map((p) => [p.eventId, p.waiting])).toEqual([
      ['w-1', 1],
      ['w-3', 0],
    ]);
    expect(parked[0].lastError).toContain('WRONGTYPE');
    expect((await row('w-2')).attempts).toBe(0);

    await redis.del(stream);
    expect((await outbox.republishParked(['w-1', 'w-3'])).sort()).toEqual(['w-1', 'w-3']);
    await waitFor(async () => (await redis.xlen(stream)) === 3, 'all three published after the fix');
    const ids = await publishedIds(stream);
    expect(ids.filter((id) => id !== 'w-3')).toEqual(['w-1', 'w-2']);
    // The relay marks rows sent in the transaction that follows the XADDs: wait for that commit.
    await waitFor(
      async () => (await t.query('SELECT 1 FROM nrs_outbox WHERE sent_at IS NULL')).length === 0,
      'all three marked sent',
    );
  });

  it('parks an event Redis refuses by ACL (NOPERM), naming the missing permission', async () => {
    const stream = unique('outbox-noperm');
    const user = unique('outbox-user').replace(/:/g, '-');
    await redis.call('ACL', 'SETUSER', user, 'on', '>secret', '~allowed:*', '+@all');
    closers.push(async () => {
      await redis.call('ACL', 'DELUSER', user);
    });
    const url = new URL(redisUrl());
    url.username = user;
    url.password = 'secret';
    const outbox = new Outbox(t.db);
    await t.db.transaction((tx) => outbox.add(tx, stream, { n: 1 }, { eventId: 'p-1', partitionKey: 'p' }));
    const relay = relayOn(clientWith({ connection: url.toString() }));
    relay.start();
    await waitFor(async () => (await row('p-1')).parked_at, 'the refused event parked');
    expect((await row('p-1')).last_error).toMatch(/NOPERM/);
  });

  it("Outbox.add refuses, inside the caller's transaction, an event the relay's client would refuse", async () => {
    const stream = unique('outbox-refuse');
    const client = clientWith({ maxPayloadBytes: 1000 });
    const outbox = new Outbox(t.db, { client });
    await t.db.transaction(async (tx) => {
      const refused = await outbox.add(tx, stream, { blob: 'x'.repeat(2000) }, { eventId: 'too-big' }).catch((err: Error) => err);
      expect(refused).toBeInstanceOf(OutboxEventRefusedError);
      expect(refused).toMatchObject({ name: 'OutboxEventRefusedError', stream, eventId: 'too-big' });
      expect((refused as Error).message).toMatch(
        /Outbox event "too-big" for stream ".*" was not added, since the relay's client would refuse it: .* over maxPayloadBytes \(1000\)/,
      );
      // The transaction is still usable: nothing ran for the refused event.
      await outbox.add(tx, stream, { small: true }, { eventId: 'fits' });
    });
    expect((await t.query<{ event_id: string }>('SELECT event_id FROM nrs_outbox')).map((r) => r.event_id)).toEqual(['fits']);
    const serializer = {
      serialize: () => {
        throw new Error('cannot encode');
      },
    };
    const strict = new Outbox(t.db, { client: { options: { maxPayloadBytes: 1000, serializer } } });
    await expect(t.db.transaction((tx) => strict.add(tx, stream, {}, { eventId: 'unencodable' }))).rejects.toThrow(
      /"unencodable" .* would refuse it: Could not serialize the data for stream .* \(cannot encode\)/,
    );
  });
});
