import { randomBytes } from 'node:crypto';
import { InvalidOptionsError, NonRetryableError } from 'nest-redis-streams';
import {
  DuplicateOutboxEventError,
  Inbox,
  type InboxDelivery,
  Outbox,
  type OutboxEventOptions,
} from 'nest-redis-streams/database';
import { testContext } from '../support/helpers.js';
import { pgKind, pgliteKind, type TestDatabase, typeormKind, usePostgresServer } from '../inbox/support/databases.js';

usePostgresServer();
// Each test creates a database; on 2 shared cores that can pass Jest's 5 s default.
jest.setTimeout(30_000);

const bad: Array<[what: string, options: OutboxEventOptions, message: RegExp]> = [
  [
    'a NUL in a header value',
    { headers: { tenant: 'ac\u0000me' } },
    /Outbox header "tenant" value "ac\\u0000me" contains a NUL character/,
  ],
  ['a NUL in a header name', { headers: { 'x\u0000': 'v' } }, /Outbox header name "x\\u0000" contains a NUL character/],
  [
    'a lone surrogate in a header',
    { headers: { h: '\ud800' } },
    /Outbox header "h" value "\\ud800" contains a lone UTF-16 surrogate/,
  ],
  [
    'a NUL in the event id',
    { eventId: 'order\u00001' },
    /Outbox eventId "order\\u00001" contains a NUL character .*: pass a stable id/,
  ],
  [
    'a lone surrogate in the event id',
    { eventId: 'order-\udc00' },
    /Outbox eventId "order-\\udc00" contains a lone UTF-16 surrogate/,
  ],
  ['a NUL in the partition key', { partitionKey: 'k\u0000' }, /Outbox partitionKey "k\\u0000" contains a NUL character/],
];

// Issue 24 item 5: bad input is refused before any SQL, naming the field and the fix, and the
// caller's transaction goes on.
describe.each([pgKind, typeormKind, pgliteKind])('Outbox and Inbox input checks, on $name', (kind) => {
  const { closers } = testContext();
  let t: TestDatabase;
  beforeEach(async () => {
    t = await kind.open();
    closers.push(() => t.close());
  });
  const eventIds = async () =>
    (await t.query<{ event_id: string }>('SELECT event_id FROM nrs_outbox ORDER BY seq')).map((r) => r.event_id);

  it.each(bad)('refuses %s with InvalidOptionsError, and the transaction still commits', async (_what, options, message) => {
    const outbox = new Outbox(t.db);
    await t.db.transaction(async (tx) => {
      const err = await outbox.add(tx, 'orders', { id: 1 }, options).catch((e: Error) => e);
      expect(err).toBeInstanceOf(InvalidOptionsError);
      expect((err as Error).message).toMatch(message);
      await outbox.add(tx, 'orders', { id: 2 }, { eventId: 'after' });
    });
    expect(await eventIds()).toEqual(['after']);
  });

  it('refuses a NUL in the stream name', async () => {
    const outbox = new Outbox(t.db);
    await expect(t.db.transaction((tx) => outbox.add(tx, 'ord\u0000ers', {}))).rejects.toThrow(
      /Outbox stream "ord\\u0000ers" contains a NUL character/,
    );
  });

  it('names a duplicate eventId (DuplicateOutboxEventError) without aborting the transaction, in one transaction or across two', async () => {
    const outbox = new Outbox(t.db);
    await t.db.transaction(async (tx) => {
      await outbox.add(tx, 'orders', { n: 1 }, { eventId: 'order-1-placed' });
      const err = await outbox.add(tx, 'orders', { n: 2 }, { eventId: 'order-1-placed' }).catch((e: Error) => e);
      expect(err).toBeInstanceOf(DuplicateOutboxEventError);
      expect(err).toMatchObject({ name: 'DuplicateOutboxEventError', eventId: 'order-1-placed' });
      expect((err as Error).message).toMatch(
        /Outbox eventId "order-1-placed" is in the outbox already .* the transaction is still usable/,
      );
      await outbox.add(tx, 'orders', { n: 3 }, { eventId: 'order-2-placed' });
    });
    await t.db.transaction(async (tx) => {
      await expect(outbox.add(tx, 'orders', {}, { eventId: 'order-2-placed' })).rejects.toBeInstanceOf(DuplicateOutboxEventError);
      await outbox.add(tx, 'orders', {}, { eventId: 'order-3-placed' });
    });
    expect(await eventIds()).toEqual(['order-1-placed', 'order-2-placed', 'order-3-placed']);
    expect(await t.query('SELECT payload FROM nrs_outbox WHERE event_id = $1', ['order-1-placed'])).toEqual([
      { payload: { n: 1 } },
    ]);
  });

  it("refuses a delivery whose event id PostgreSQL cannot store with NonRetryableError (dead-lettered at once), keeping the handler's transaction", async () => {
    const inbox = new Inbox(t.db);
    const delivery = (eventId: string): InboxDelivery => ({
      getStream: () => 'orders',
      getGroup: () => 'payments',
      getEventId: () => eventId,
      getEntryId: () => '1-0',
    });
    await t.db.transaction(async (tx) => {
      const err = await inbox.record(tx, delivery('e\u00001'), 'payments.charge').catch((e: Error) => e);
      expect(err).toBeInstanceOf(NonRetryableError);
      expect((err as Error).message).toMatch(/event id "e\\u00001" of entry 1-0 in stream "orders" contains a NUL character/);
      // Past what the inbox's primary key index holds: a raw INSERT failure would abort the transaction.
      const long = await inbox.record(tx, delivery(randomBytes(1500).toString('hex')), 'payments.charge').catch((e: Error) => e);
      expect(long).toBeInstanceOf(NonRetryableError);
      expect((long as Error).message).toMatch(
        /^The event id "[0-9a-f]{20}…" of entry 1-0 in stream "orders" makes the inbox key \d+ bytes long, over 2048/,
      );
      expect(await inbox.record(tx, delivery('e-2'), 'payments.charge')).toBe(true);
    });
    expect(await t.query('SELECT event_id FROM nrs_inbox')).toEqual([{ event_id: 'e-2' }]);
  });
});
