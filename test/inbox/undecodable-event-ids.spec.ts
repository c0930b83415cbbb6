import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { JsonCodec, RedisStreamsContext, encodeEnvelope } from 'nest-redis-streams';
import { Inbox } from 'nest-redis-streams/database';
import { addWithEventIdBytes } from '../core/binary-entries.js';
import { allSettled } from '../support/settled.js';
import { startMicroservice, testContext, unique } from '../support/helpers.js';
import { pgKind, type TestDatabase, usePostgresServer } from './support/databases.js';

usePostgresServer();
// Each test creates a database and starts an app; on 2 busy cores that passes Jest's 5 s default.
jest.setTimeout(60_000);

describe('Inbox and event ids that are not UTF-8, on PostgreSQL 15', () => {
  const { redis, closers } = testContext();
  let t: TestDatabase;
  beforeEach(async () => {
    t = await pgKind.open();
    closers.push(() => t.close());
    await t.query('CREATE TABLE charges (order_id text PRIMARY KEY, amount int)');
  });

  it('charges neither of two orders whose binary ids read alike, and parks both instead of taking the second for a duplicate', async () => {
    const stream = unique('inbox-binary-ids');
    const inbox = new Inbox(t.db);
    const outcomes: string[] = [];
    @Controller()
    class Payments {
      @EventPattern(stream, { group: 'payments' })
      async charge(@Payload() order: { id: string; amount: number }, @Ctx() ctx: RedisStreamsContext) {
        const outcome = await inbox.run(ctx, 'payments.charge', (tx) =>
          t.db.executor(tx).query('INSERT INTO charges VALUES ($1, $2)', [order.id, order.amount]),
        );
        outcomes.push(`${order.id} ${outcome.status}`);
      }
    }
    const { app } = await startMicroservice([Payments], {});
    closers.push(() => app.close());

    await addWithEventIdBytes(redis, stream, Buffer.from([0xff]), { id: 'o-1', amount: 10 });
    await addWithEventIdBytes(redis, stream, Buffer.from([0xfe]), { id: 'o-2', amount: 20 });
    const last = (await redis.xadd(
      stream,
      '*',
      ...encodeEnvelope({ data: { id: 'o-3', amount: 30 }, eventId: 'order-o-3' }, new JsonCodec()),
    ))!;
    await allSettled(redis, stream, 'payments', last);

    expect(outcomes).toEqual(['o-3 applied']);
    expect(await t.query('SELECT order_id FROM charges')).toEqual([{ order_id: 'o-3' }]);
    expect(await t.query('SELECT event_id FROM nrs_inbox')).toEqual([{ event_id: 'order-o-3' }]);
    const parked = await redis.xrange(`${stream}:dlq`, '-', '+');
    expect(parked.map(([, f]) => f[f.indexOf('dlq:reason') + 1])).toEqual(['undecodable-event-id', 'undecodable-event-id']);
    expect(parked.map(([, f]) => JSON.parse(f[f.indexOf('data') + 1]).id)).toEqual(['o-1', 'o-2']);
  });
});
