import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { RedisStreamsClient, RedisStreamsContext, StreamRecord } from 'nest-redis-streams';
import { Inbox } from 'nest-redis-streams/database';
import { pendingCount, redisUrl, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';
import { pgKind, type TestDatabase, usePostgresServer } from './support/databases.js';

usePostgresServer();
// Each test creates a database and starts apps; on 2 shared cores that can pass Jest's 5 s default.
jest.setTimeout(30_000);

describe('Inbox in a RedisStreamsServer handler, on PostgreSQL 15', () => {
  const { redis, closers } = testContext();
  let t: TestDatabase;
  beforeEach(async () => {
    t = await pgKind.open();
    closers.push(() => t.close());
    await t.query('CREATE TABLE charges (order_id text PRIMARY KEY, amount int)');
  });

  it('charges a re-published order once and acks every copy', async () => {
    const stream = unique('inbox-orders');
    const inbox = new Inbox(t.db);
    const outcomes: string[] = [];
    @Controller()
    class Payments {
      @EventPattern(stream, { group: 'payments' })
      async charge(@Payload() order: { id: string; amount: number }, @Ctx() ctx: RedisStreamsContext) {
        const outcome = await inbox.run(ctx, 'payments.charge', (tx) =>
          t.db.executor(tx).query('INSERT INTO charges VALUES ($1, $2)', [order.id, order.amount]),
        );
        outcomes.push(outcome.status);
      }
    }
    const { app } = await startMicroservice([Payments], {});
    closers.push(() => app.close());
    // Plain XADDs: on Redis 8.6+ the client's IDMP writes would let the stream drop the copies, but
    // a copy still arrives past the IDMP window or from a producer without it; the inbox absorbs it.
    const client = new RedisStreamsClient({ connection: redisUrl(), idempotentWrites: false });
    closers.push(() => client.close());
    // A producer retry: the same event id written three times (three entries).
    for (let i = 0; i < 3; i++)
      await lastValueFrom(client.emit(stream, new StreamRecord({ id: 'o-1', amount: 50 }, { eventId: 'order-o-1' })));
    await waitFor(() => outcomes.length === 3, 'three deliveries');
    expect(outcomes.sort()).toEqual(['applied', 'duplicate', 'duplicate']);
    expect(await t.query('SELECT order_id, amount FROM charges')).toEqual([{ order_id: 'o-1', amount: 50 }]);
    await waitFor(async () => (await pendingCount(redis, stream, 'payments')) === 0, 'every copy to be acked');
  });
});
