import { Observable, lastValueFrom } from 'rxjs';
import { RedisStreamsClient, StreamRecord } from 'nest-redis-streams';
import { Outbox, OutboxRelay, type OutboxPublisher } from 'nest-redis-streams/database';
import { pgliteKind, type TestDatabase } from '../inbox/support/databases.js';
import { readAll, redisUrl, testContext, unique, waitFor } from '../support/helpers.js';
import { capabilitiesOf } from './capabilities-of.js';

jest.setTimeout(30_000);

// On a server with XADD IDMP (Redis 8.6+) a re-sent event id leaves one stream entry; elsewhere
// the old path writes the copy (and the consumers' inbox absorbs it). Asserted by what the server
// was detected to offer, so the same file proves both paths in the server matrix.
describe('idempotent writes (XADD IDMP where the server has it)', () => {
  const { redis, closers } = testContext();
  const has = capabilitiesOf(redis);
  const client = (options: ConstructorParameters<typeof RedisStreamsClient>[0] = {}) => {
    const c = new RedisStreamsClient({ connection: redisUrl(), ...options });
    closers.push(() => c.close());
    return c;
  };
  const windowOf = async (stream: string) => {
    const info = (await redis.xinfo('STREAM', stream)) as unknown[];
    const at = (name: string) => Number(info[info.indexOf(name) + 1]);
    return { duration: at('idmp-duration'), maxSize: at('idmp-maxsize') };
  };

  it('an emit retried with the same event id (a lost reply) leaves one entry and answers the first id', async () => {
    const stream = unique('idmp-emit');
    const producer = client();
    const record = () => new StreamRecord({ n: 1 }, { eventId: 'order-1:paid', headers: { sentAt: String(Date.now()) } });
    const first = await lastValueFrom(producer.emit(stream, record()));
    // A per-send header differs on the retry: the IDMP id, not the fields, decides.
    const retried = await lastValueFrom(producer.emit(stream, record()));
    const other = await lastValueFrom(producer.emit(stream, new StreamRecord({ n: 2 }, { eventId: 'order-2:paid' })));
    const plain = await lastValueFrom(producer.emitBatch(stream, [{ n: 3 }, { n: 3 }]));
    const entries = await readAll(redis, stream);
    if (has().idmp) {
      expect(retried).toBe(first);
      expect(entries.map(([id]) => id)).toEqual([first, other, ...plain]);
      // The stream keeps the server's window: setting one would empty it.
      const [, duration] = (await redis.config('GET', 'stream-idmp-duration')) as string[];
      const [, maxSize] = (await redis.config('GET', 'stream-idmp-maxsize')) as string[];
      expect(await windowOf(stream)).toEqual({ duration: Number(duration), maxSize: Number(maxSize) });
    } else {
      expect(retried).not.toBe(first);
      expect(entries.filter(([, f]) => f.event_id === 'order-1:paid')).toHaveLength(2);
    }
    // emitBatch: the same event id twice in one batch, and again later.
    const batch = [new StreamRecord({ b: 1 }, { eventId: 'b-1' }), new StreamRecord({ b: 1 }, { eventId: 'b-1' })];
    const ids = await lastValueFrom(producer.emitBatch(stream, batch));
    expect(ids[0] === ids[1]).toBe(has().idmp);
  });

  it('sets a window only where it differs (XCFGSET empties it): a restarted producer still drops the copy', async () => {
    const stream = unique('idmp-window');
    const wanted = { idempotentWrites: { durationSeconds: 600, maxSize: 10_000 } };
    await lastValueFrom(client().emit(stream, { n: 0 }));
    const first = await lastValueFrom(client(wanted).emit(stream, new StreamRecord({ n: 1 }, { eventId: 'e-1' })));
    if (!has().idmp) return expect(await redis.xlen(stream)).toBe(2);
    expect(await windowOf(stream)).toEqual({ duration: 600, maxSize: 10_000 });
    // A restarted producer (new client) sends e-1 again: the window was kept, so the copy is dropped.
    const again = await lastValueFrom(client(wanted).emit(stream, new StreamRecord({ n: 1 }, { eventId: 'e-1' })));
    expect(again).toBe(first);
    expect(await redis.xlen(stream)).toBe(2);
    // Another setting is applied before the first write of a producer that wants it.
    await lastValueFrom(client({ idempotentWrites: { durationSeconds: 60, maxSize: 50 } }).emit(stream, { n: 2 }));
    expect(await windowOf(stream)).toEqual({ duration: 60, maxSize: 50 });
    // idempotentWrites: false sends plain XADDs.
    await lastValueFrom(client({ idempotentWrites: false }).emit(stream, new StreamRecord({ n: 3 }, { eventId: 'e-3' })));
    await lastValueFrom(client({ idempotentWrites: false }).emit(stream, new StreamRecord({ n: 3 }, { eventId: 'e-3' })));
    expect((await readAll(redis, stream)).filter(([, f]) => f.event_id === 'e-3')).toHaveLength(2);
  });

  it('refuses a window outside XCFGSET limits, naming the option', () => {
    expect(() => new RedisStreamsClient({ idempotentWrites: { maxSize: 20_000 } })).toThrow(
      'Option "idempotentWrites.maxSize" must be an integer from 1 to 10000, got 20000',
    );
  });

  describe('outbox relay', () => {
    let t: TestDatabase;
    beforeEach(async () => {
      t = await pgliteKind.open();
      closers.push(() => t.close());
    });

    it('publishes an event again after losing the XADD reply (killed before marking it sent): one stream entry on IDMP servers', async () => {
      const stream = unique('idmp-relay');
      const producer = client();
      let lost = 0;
      // The first publish reaches Redis, then the relay hears nothing back, as when it is killed
      // between XADD and marking the row sent: the row stays unsent and is published again.
      const flaky: OutboxPublisher = {
        emit: (pattern, record) =>
          new Observable((subscriber) => {
            lastValueFrom(producer.emit(pattern, record)).then(
              (id) => {
                if (lost++ === 0) subscriber.error(new Error('connection lost after XADD'));
                else {
                  subscriber.next(id);
                  subscriber.complete();
                }
              },
              (err: unknown) => subscriber.error(err),
            );
          }),
      };
      const relay = new OutboxRelay(t.db, flaky, { pollIntervalMs: 50, retryDelayMs: 10 });
      closers.push(() => relay.close());
      await t.db.transaction((tx) => new Outbox(t.db).add(tx, stream, { order: 1 }, { eventId: 'order-1:created' }));
      relay.start();
      await waitFor(async () => (await t.query('SELECT 1 FROM nrs_outbox WHERE sent_at IS NOT NULL')).length === 1, 'sent');
      const entries = await readAll(redis, stream);
      expect(lost).toBe(2);
      expect(entries).toHaveLength(has().idmp ? 1 : 2);
      const [{ entry_id }] = await t.query('SELECT entry_id FROM nrs_outbox');
      // The row records the entry its event lives in: the first (and only) one, or the copy.
      expect(entry_id).toBe(entries[entries.length - 1][0]);
    }, 60_000);
  });
});
