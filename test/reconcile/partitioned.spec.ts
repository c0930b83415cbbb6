import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import { DeadLetterService, NonRetryableError, RedisStreamsClient, RedisStreamsContext } from 'nest-redis-streams';
import {
  applyMigrations,
  deadLetterStreamsOf,
  Inbox,
  Outbox,
  OutboxRelay,
  pgDatabase,
  reconcile,
} from 'nest-redis-streams/database';
import { partitionStream } from '../../libs/nest-redis-streams/src/keys/index.js';
import { redisUrl, startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';
import { createDatabase, testPool, usePostgresServer } from '../inbox/support/databases.js';
import { runCli } from '../cli/run-cli.js';

usePostgresServer();
// Starts an app and a relay, and spawns the compiled CLI: give it room on 2 shared cores.
jest.setTimeout(60_000);

const PARTITIONS = 3;

// Issue 24 item 18: on a partitioned stream, parked events are in each partition's dead-letter stream.
describe('reconcile on a partitioned stream (API and CLI, PostgreSQL 15 and Redis)', () => {
  const { redis, closers } = testContext();

  it("counts events parked in every partition's dead-letter stream as dead-lettered, not missing, and the CLI exits 0", async () => {
    const url = await createDatabase();
    const pool = testPool(url, 4);
    closers.push(() => pool.end());
    const db = pgDatabase(pool);
    await applyMigrations(db);
    const stream = unique('reconcile-partitioned');
    const inbox = new Inbox(db);
    @Controller()
    class Payments {
      @EventPattern(stream, { group: 'payments', partitions: PARTITIONS })
      async charge(@Payload() order: { poison: boolean }, @Ctx() ctx: RedisStreamsContext) {
        if (order.poison) throw new NonRetryableError('the order has no amount');
        await inbox.run(ctx, 'payments.charge', async () => undefined);
      }
    }
    const { app } = await startMicroservice([Payments], {});
    closers.push(() => app.close());
    const client = new RedisStreamsClient({ connection: redisUrl(), partitions: { [stream]: PARTITIONS } });
    closers.push(() => client.close());
    // k-0 -> partition 1, k-1 -> 2, k-3 -> 0 (FNV-1a): poison in two partitions, good ones in all.
    const events = [
      { id: 'o-1', key: 'k-0', poison: false },
      { id: 'o-2', key: 'k-1', poison: false },
      { id: 'o-3', key: 'k-3', poison: false },
      { id: 'o-4', key: 'k-0', poison: true },
      { id: 'o-5', key: 'k-3', poison: true },
    ];
    const outbox = new Outbox(db);
    await db.transaction(async (tx) => {
      for (const e of events) await outbox.add(tx, stream, { poison: e.poison }, { eventId: e.id, partitionKey: e.key });
    });
    const relay = new OutboxRelay(db, client, { pollIntervalMs: 50 });
    closers.push(() => relay.close());
    relay.start();
    const dlqs = deadLetterStreamsOf(stream, PARTITIONS);
    expect(dlqs).toEqual([`${stream}:dlq`, ...[0, 1, 2].map((p) => `${partitionStream(stream, p)}:dlq`)]);
    await waitFor(async () => (await Promise.all(dlqs.map((d) => redis.xlen(d)))).reduce((a, b) => a + b) === 2, 'two parked');
    await waitFor(async () => (await pool.query('SELECT 1 FROM nrs_inbox')).rowCount === 3, 'three applied');
    expect(await Promise.all(dlqs.map((d) => redis.xlen(d)))).toEqual([0, 1, 1, 0]);

    const window = { from: new Date(Date.now() - 3600_000), to: new Date(Date.now() + 1000) };
    const report = await reconcile(db, {
      ...window,
      source: { outboxStream: stream },
      target: { group: 'payments', handler: 'payments.charge' },
      deadLetters: { service: new DeadLetterService(redis), stream: dlqs },
    });
    expect({ ...report, deadLettered: [...report.deadLettered].sort() }).toEqual({
      expected: 5,
      appliedOnce: 3,
      missing: [],
      duplicated: [],
      deadLettered: ['o-4', 'o-5'],
    });

    const args = ['reconcile', '--database-url', url, '--stream', stream, '--group', 'payments', '--handler', 'payments.charge'];
    const run = await runCli(args);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toContain('expected 5, applied once 3, missing 0, duplicated 0, dead-lettered 2');
    expect(run.stdout).toContain(`dead letters from ${stream}:dlq and 2 partition dead-letter streams`);
    const json = JSON.parse((await runCli([...args, '--json'])).stdout) as {
      deadLetterStreams: string[];
      deadLettered: string[];
    };
    expect(json.deadLettered.sort()).toEqual(['o-4', 'o-5']);
    expect(json.deadLetterStreams).toEqual([
      `${stream}:dlq`,
      `${partitionStream(stream, 0)}:dlq`,
      `${partitionStream(stream, 1)}:dlq`,
    ]);
  });
});
