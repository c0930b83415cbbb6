import { DeadLetterService } from 'nest-redis-streams';
import { Inbox, type InboxDelivery, Outbox, reconcile } from 'nest-redis-streams/database';
import { testContext, unique } from '../support/helpers.js';
import { pgKind, type TestDatabase, usePostgresServer } from '../inbox/support/databases.js';

usePostgresServer();
// Each test creates a database and starts apps; on 2 shared cores that can pass Jest's 5 s default.
jest.setTimeout(30_000);

const delivery = (eventId: string): InboxDelivery => ({
  getStream: () => 'orders',
  getGroup: () => 'payments',
  getEventId: () => eventId,
  getEntryId: () => '1-0',
});

describe('reconcile, on PostgreSQL 15', () => {
  const { redis, closers } = testContext();
  let t: TestDatabase;
  beforeEach(async () => {
    t = await pgKind.open();
    closers.push(() => t.close());
  });

  it('reports missing, duplicated and dead-lettered events of a window by event id', async () => {
    const outbox = new Outbox(t.db);
    const inbox = new Inbox(t.db);
    await t.query('CREATE TABLE charges (event_id text)');
    await t.db.transaction(async (tx) => {
      for (const id of ['e1', 'e2', 'e3', 'e4', 'e5']) await outbox.add(tx, 'orders', {}, { eventId: id });
      await outbox.add(tx, 'refunds', {}, { eventId: 'other-stream' });
    });
    await t.db.transaction((tx) => outbox.add(tx, 'orders', {}, { eventId: 'too-old' }));
    await t.query(`UPDATE nrs_outbox SET created_at = now() - interval '2 days' WHERE event_id = 'too-old'`);
    for (const id of ['e1', 'e2']) {
      await inbox.run(delivery(id), 'payments.charge', (tx) => t.db.executor(tx).query('INSERT INTO charges VALUES ($1)', [id]));
    }
    // A charge written twice by a handler that bypassed the inbox.
    await t.query(`INSERT INTO charges VALUES ('e3'), ('e3')`);
    const dlq = unique('orders:dlq');
    await redis.xadd(
      dlq,
      '*',
      'event_id',
      'e4',
      'data',
      '{}',
      'dlq:reason',
      'non-retryable',
      'dlq:stream',
      'orders',
      'dlq:id',
      '3-0',
      'dlq:group',
      'payments',
    );
    await redis.xadd(
      dlq,
      '*',
      'event_id',
      'e5',
      'data',
      '{}',
      'dlq:reason',
      'non-retryable',
      'dlq:stream',
      'orders',
      'dlq:id',
      '4-0',
      'dlq:group',
      'audit',
    );
    const window = { from: new Date(Date.now() - 3600_000), to: new Date(Date.now() + 1000) };
    const deadLetters = { service: new DeadLetterService(redis), stream: dlq };

    const byInbox = await reconcile(t.db, {
      ...window,
      source: { outboxStream: 'orders' },
      target: { group: 'payments', handler: 'payments.charge' },
      deadLetters,
    });
    expect(byInbox).toEqual({ expected: 5, appliedOnce: 2, missing: ['e3', 'e5'], duplicated: [], deadLettered: ['e4'] });

    const byEffects = await reconcile(t.db, {
      ...window,
      source: { query: `SELECT event_id FROM nrs_outbox WHERE stream = 'orders' AND created_at >= $1 AND created_at < $2` },
      target: { query: 'SELECT event_id FROM charges WHERE event_id = ANY($1)', group: 'payments' },
      deadLetters,
    });
    expect(byEffects).toEqual({
      expected: 5,
      appliedOnce: 2,
      missing: ['e5'],
      duplicated: [{ eventId: 'e3', effects: 2 }],
      deadLettered: ['e4'],
    });
  });

  it('rejects a window whose end is not after its start', async () => {
    const now = new Date();
    await expect(
      reconcile(t.db, { from: now, to: now, source: { outboxStream: 'orders' }, target: { group: 'g', handler: 'h' } }),
    ).rejects.toThrow(/Reconcile window from .* is not two Dates with from < to/);
  });
});
