import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { concatMap, lastValueFrom } from 'rxjs';
import { RedisStreamsClient, RedisStreamsContext, StreamRecord } from 'nest-redis-streams';
import { Inbox, Outbox, OutboxRelay, type OutboxPublisher, reconcile } from 'nest-redis-streams/database';
import { partitionStream } from '../../libs/nest-redis-streams/src/keys/index.js';
import { redisUrl, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';
import { pgKind, type TestDatabase, usePostgresServer } from '../inbox/support/databases.js';

usePostgresServer();
// Each test creates a database and starts an app and a relay; on 2 shared cores that can pass Jest's 5 s default.
jest.setTimeout(60_000);

const PARTITIONS = 4;

// Issue 24 item 2: an unkeyed event re-published on a partitioned stream is applied once.
describe('a partitioned stream, its outbox relay and its inbox, on PostgreSQL 15', () => {
  const { redis, closers } = testContext();
  let t: TestDatabase;
  beforeEach(async () => {
    t = await pgKind.open();
    closers.push(() => t.close());
    await t.query('CREATE TABLE charges (event_id text)');
  });

  /** A payments service whose handler charges through the inbox; the outcomes it saw. */
  async function payments(stream: string): Promise<string[]> {
    const inbox = new Inbox(t.db);
    const outcomes: string[] = [];
    @Controller()
    class Payments {
      @EventPattern(stream, { group: 'payments', partitions: PARTITIONS })
      async charge(@Payload() _order: unknown, @Ctx() ctx: RedisStreamsContext) {
        const outcome = await inbox.run(ctx, 'payments.charge', (tx) =>
          t.db.executor(tx).query('INSERT INTO charges VALUES ($1)', [ctx.getEventId()]),
        );
        outcomes.push(outcome.status);
      }
    }
    const { app } = await startMicroservice([Payments], {});
    closers.push(() => app.close());
    return outcomes;
  }

  const partitionLengths = async (stream: string) =>
    Promise.all(Array.from({ length: PARTITIONS }, (_, p) => redis.xlen(partitionStream(stream, p))));

  it('PostgreSQL lost between XADD and the COMMIT marking the row sent: the relay publishes again into the same partition, the inbox applies it once, reconcile sees one event', async () => {
    const stream = unique('outbox-partitioned');
    const outcomes = await payments(stream);
    // idempotentWrites off: on servers with XADD IDMP (Redis 8.6) the stream itself would drop the
    // second copy (test/servers/idmp.spec.ts); this is about where a copy lands and the inbox.
    const client = new RedisStreamsClient({
      connection: redisUrl(),
      partitions: { [stream]: PARTITIONS },
      idempotentWrites: false,
    });
    closers.push(() => client.close());
    // The relay's first publish is stored, then its connection (the one that locked the batch) is
    // terminated before it commits.
    let terminated = 0;
    const publisher: OutboxPublisher = {
      emit: (pattern, record) =>
        client.emit(pattern, record).pipe(
          concatMap(async (id) => {
            if (terminated === 0) {
              const rows = await t.query<{ ok: boolean }>(
                `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
                  WHERE datname = current_database() AND pid <> pg_backend_pid() AND state LIKE 'idle in transaction%'
                    AND query LIKE '%FROM nrs_outbox%SKIP LOCKED%'`,
              );
              terminated = rows.length;
            }
            return id;
          }),
        ),
    };
    const outbox = new Outbox(t.db);
    await t.db.transaction((tx) => outbox.add(tx, stream, { amount: 5 }, { eventId: 'order-1-placed' }));
    const relay = new OutboxRelay(t.db, publisher, { pollIntervalMs: 50, listen: false });
    closers.push(() => relay.close());
    relay.start();
    await waitFor(
      async () => (await t.query(`SELECT 1 FROM nrs_outbox WHERE sent_at IS NOT NULL`)).length === 1,
      'the row marked sent after the re-publish',
    );
    expect(terminated).toBe(1);
    await waitFor(() => outcomes.length === 2, 'both copies handled');
    // Two copies, one partition.
    const lengths = await partitionLengths(stream);
    expect(lengths.reduce((a, b) => a + b, 0)).toBe(2);
    expect(lengths.filter((n) => n > 0)).toEqual([2]);
    expect(outcomes.sort()).toEqual(['applied', 'duplicate']);
    expect(await t.query('SELECT event_id FROM charges')).toEqual([{ event_id: 'order-1-placed' }]);
    const window = { from: new Date(Date.now() - 3600_000), to: new Date(Date.now() + 1000) };
    expect(
      await reconcile(t.db, {
        ...window,
        source: { outboxStream: stream },
        target: { group: 'payments', handler: 'payments.charge' },
      }),
    ).toEqual({ expected: 1, appliedOnce: 1, missing: [], duplicated: [], deadLettered: [] });
  });

  it('copies of one event that reach different partitions (an older producer) share one inbox identity', async () => {
    const stream = unique('inbox-partitions');
    const outcomes = await payments(stream);
    const client = new RedisStreamsClient({ connection: redisUrl(), partitions: { [stream]: PARTITIONS } });
    closers.push(() => client.close());
    // Two partition keys that hash to different partitions, one event id.
    for (const partitionKey of ['k-0', 'k-3'])
      await lastValueFrom(client.emit(stream, new StreamRecord({}, { eventId: 'order-2-placed', partitionKey })));
    expect((await partitionLengths(stream)).filter((n) => n > 0)).toEqual([1, 1]);
    await waitFor(() => outcomes.length === 2, 'both copies handled');
    expect(outcomes.sort()).toEqual(['applied', 'duplicate']);
    expect(await t.query('SELECT stream, event_id FROM nrs_inbox')).toEqual([{ stream, event_id: 'order-2-placed' }]);

    // A row written before partitions shared an identity, under the partition's own key, still counts.
    await t.query(
      `INSERT INTO nrs_inbox (stream, group_name, handler, event_id, entry_id) VALUES ($1, 'payments', 'payments.charge', 'order-0-placed', '1-0')`,
      [partitionStream(stream, 0)],
    );
    await lastValueFrom(client.emit(stream, new StreamRecord({}, { eventId: 'order-0-placed', partitionKey: 'k-1' })));
    await waitFor(() => outcomes.length === 3, 'the old event redelivered');
    expect(outcomes[2]).toBe('duplicate');
    expect(await t.query('SELECT count(*)::int AS n FROM charges')).toEqual([{ n: 1 }]);
  });
});
