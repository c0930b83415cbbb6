import { Inbox, type InboxDelivery, listMigrations, applyMigrations } from 'nest-redis-streams/database';
import { waitFor } from '../support/helpers.js';
import { type DatabaseKind, pgKind, pgliteKind, type TestDatabase, typeormKind, usePostgresServer } from './support/databases.js';

usePostgresServer();
// Each test creates a database and starts apps; on 2 shared cores that can pass Jest's 5 s default.
jest.setTimeout(30_000);

/** A delivery as RedisStreamsContext reports it. */
function delivery(eventId: string | undefined, entryId = '1-0', stream = 'orders', group = 'payments'): InboxDelivery {
  return { getStream: () => stream, getGroup: () => group, getEventId: () => eventId, getEntryId: () => entryId };
}

// The same suite on a PostgreSQL 15 server (two adapters) and on embedded PGlite.
describe.each<DatabaseKind>([pgKind, typeormKind, pgliteKind])('Inbox on $name', (kind) => {
  let t: TestDatabase;
  let inbox: Inbox<any>;
  beforeEach(async () => {
    t = await kind.open();
    inbox = new Inbox(t.db);
    await t.query('CREATE TABLE charges (order_id text, amount int)');
  });
  afterEach(() => t.close());

  const charge = (orderId: string) => (tx: any) =>
    t.db.executor(tx).query('INSERT INTO charges VALUES ($1, 100) RETURNING order_id', [orderId]);
  const charges = async () =>
    (await t.query<{ order_id: string }>('SELECT order_id FROM charges ORDER BY order_id')).map((r) => r.order_id);

  it('runs the effect once for redelivered, reclaimed and re-published copies of an event, recording stream, group, handler, event and entry id', async () => {
    expect(await inbox.run(delivery('order-1', '5-0'), 'payments.charge', charge('o-1'))).toEqual({
      status: 'applied',
      result: [{ order_id: 'o-1' }],
    });
    // The same entry again (crash after commit, before XACK), and a re-published copy (new entry id).
    expect(await inbox.run(delivery('order-1', '5-0'), 'payments.charge', charge('o-1'))).toEqual({ status: 'duplicate' });
    expect(await inbox.run(delivery('order-1', '9-0'), 'payments.charge', charge('o-1'))).toEqual({ status: 'duplicate' });
    expect(await charges()).toEqual(['o-1']);
    const rows = await t.query('SELECT stream, group_name, handler, event_id, entry_id, processed_at FROM nrs_inbox');
    expect(rows).toEqual([
      expect.objectContaining({
        stream: 'orders',
        group_name: 'payments',
        handler: 'payments.charge',
        event_id: 'order-1',
        entry_id: '5-0',
      }),
    ]);
    expect(rows[0].processed_at).toBeInstanceOf(Date);
  });

  it('keys on stream, group and handler too, and on the entry id for entries without an event id', async () => {
    await inbox.run(delivery('e'), 'a', charge('1'));
    await inbox.run(delivery('e'), 'b', charge('2'));
    await inbox.run(delivery('e', '1-0', 'orders', 'audit'), 'a', charge('3'));
    await inbox.run(delivery('e', '1-0', 'refunds'), 'a', charge('4'));
    await inbox.run(delivery(undefined, '7-0'), 'a', charge('5'));
    await inbox.run(delivery(undefined, '7-0'), 'a', charge('5'));
    expect(await charges()).toEqual(['1', '2', '3', '4', '5']);
    expect(await t.query('SELECT event_id FROM nrs_inbox WHERE event_id LIKE $1', ['entry:%'])).toEqual([
      { event_id: 'entry:7-0' },
    ]);
  });

  it('records nothing when the effect fails, so the retry runs it', async () => {
    await expect(
      inbox.run(delivery('order-2'), 'payments.charge', async (tx) => {
        await charge('o-2')(tx);
        throw new Error('provider down');
      }),
    ).rejects.toThrow('provider down');
    expect(await t.query('SELECT * FROM nrs_inbox')).toEqual([]);
    expect(await charges()).toEqual([]);
    expect((await inbox.run(delivery('order-2'), 'payments.charge', charge('o-2'))).status).toBe('applied');
    expect(await charges()).toEqual(['o-2']);
  });

  it('works inside a transaction the caller holds: its rollback takes the inbox row with it, its commit keeps both', async () => {
    await expect(
      t.db.transaction(async (tx) => {
        const outcome = await inbox.runIn(tx, delivery('order-3'), 'payments.charge', charge('o-3'));
        expect(outcome.status).toBe('applied');
        throw new Error('a later step of the caller failed');
      }),
    ).rejects.toThrow('a later step');
    expect(await t.query('SELECT * FROM nrs_inbox')).toEqual([]);
    await t.db.transaction(async (tx) => {
      expect(await inbox.record(tx, delivery('order-3'), 'payments.charge')).toBe(true);
      await charge('o-3')(tx);
      expect(await inbox.record(tx, delivery('order-3'), 'payments.charge')).toBe(false);
    });
    expect(await charges()).toEqual(['o-3']);
  });

  it('rejects an empty handler name with a message naming the fix', async () => {
    await expect(inbox.run(delivery('x'), '', charge('x'))).rejects.toThrow(/Inbox handler name "" .*name the effect/);
  });

  it('deletes rows older than a date in batches and keeps newer ones', async () => {
    for (let i = 0; i < 7; i++) await inbox.run(delivery(`old-${i}`), 'h', async () => undefined);
    await t.query(`UPDATE nrs_inbox SET processed_at = now() - interval '8 days'`);
    await inbox.run(delivery('new'), 'h', async () => undefined);
    const cutoff = new Date(Date.now() - 7 * 24 * 3600_000);
    expect(await inbox.deleteProcessedBefore(cutoff, { batchSize: 3 })).toBe(7);
    expect(await t.query('SELECT event_id FROM nrs_inbox')).toEqual([{ event_id: 'new' }]);
    await expect(inbox.deleteProcessedBefore(cutoff, { batchSize: 0 })).rejects.toThrow(/batchSize 0 is not a positive integer/);
  });

  it('applies the shipped migrations once, recording each, and plans the indexes the inbox and relay query by', async () => {
    expect(await applyMigrations(t.db)).toEqual([]);
    const names = (await t.query<{ name: string }>('SELECT name FROM nrs_schema_migrations ORDER BY name')).map((r) => r.name);
    expect(names).toEqual(listMigrations().map((m) => m.name));
    expect(names).toEqual(['001_inbox.sql', '002_outbox.sql', '003_outbox_parked.sql']);
    const indexes = (
      await t.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename LIKE 'nrs_%' ORDER BY 1`)
    ).map((r) => r.indexname);
    expect(indexes).toEqual(
      expect.arrayContaining([
        'nrs_inbox_pkey',
        'nrs_inbox_processed_at',
        'nrs_outbox_unsent',
        'nrs_outbox_unsent_key',
        'nrs_outbox_created_at',
        'nrs_outbox_parked',
        'nrs_outbox_retrying',
      ]),
    );
  });

  // On a server the copy waits on the first one's uncommitted key; on PGlite (one connection) it
  // queues behind the first one's transaction. Either way it runs after the first and skips.
  it('lets a second delivery that arrives during the first wait for it and then skip it', async () => {
    let release!: () => void;
    let entered!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const firstHoldsKey = new Promise<void>((r) => (entered = r));
    const settled: string[] = [];
    const first = inbox
      .run(delivery('order-4'), 'payments.charge', async (tx) => {
        entered();
        await charge('o-4')(tx);
        await gate;
        return 'first';
      })
      .finally(() => settled.push('first'));
    // Start the copy only once the first delivery's inbox row exists (uncommitted).
    await firstHoldsKey;
    const second = inbox.run(delivery('order-4', '2-0'), 'payments.charge', charge('o-4')).finally(() => settled.push('second'));
    if (kind.concurrentTransactions) {
      // The second insert blocks on the first one's uncommitted key.
      await waitFor(
        async () =>
          (await t.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO nrs_inbox%'`))
            .length,
        'the second delivery to wait on the first one’s key',
      );
    }
    // Neither has settled while the first holds the key: the second waited for it. (Once released,
    // the two answers come back on two connections in either order.)
    expect(settled).toEqual([]);
    release();
    expect(await first).toEqual({ status: 'applied', result: 'first' });
    expect(await second).toEqual({ status: 'duplicate' });
    expect(await charges()).toEqual(['o-4']);
    // Its own timeout: on TypeORM the lock wait is polled through the pool (4 s on a quiet machine,
    // past Jest's 5 s default when the machine is busy).
  }, 30_000);
});
