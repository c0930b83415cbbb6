import { RedisStreamsClient } from 'nest-redis-streams';
import { applyMigrations, Outbox, OutboxRelay, pgDatabase } from 'nest-redis-streams/database';
import { redisUrl, testContext, unique } from '../support/helpers.js';
import { createDatabase, testPool, usePostgresServer } from '../inbox/support/databases.js';
import { runCli } from '../cli/run-cli.js';

usePostgresServer();
// Creates a database and spawns the compiled binary a few times: give it room on 2 shared cores.
jest.setTimeout(60_000);

describe('nest-redis-streams outbox (the compiled binary, against PostgreSQL 15)', () => {
  const { closers } = testContext();

  it('lists parked events with their error and what waits behind them, exiting 1 while any is parked and 0 once none is', async () => {
    const url = await createDatabase();
    const pool = testPool(url, 2);
    closers.push(() => pool.end());
    const db = pgDatabase(pool);
    await applyMigrations(db);
    const stream = unique('cli-outbox');
    const outbox = new Outbox(db);
    await db.transaction(async (tx) => {
      await outbox.add(tx, stream, { blob: 'x'.repeat(3000) }, { eventId: 'big-1', partitionKey: 'c-1' });
      await outbox.add(tx, stream, { n: 1 }, { eventId: 'next-1', partitionKey: 'c-1' });
      await outbox.add(tx, stream, { n: 2 }, { eventId: 'next-2', partitionKey: 'c-1' });
    });
    const client = new RedisStreamsClient({ connection: redisUrl(), maxPayloadBytes: 1000 });
    closers.push(() => client.close());
    const relay = new OutboxRelay(db, client);
    expect(await relay.round()).toMatchObject({ parked: 1, published: 0 });

    const run = await runCli(['outbox', '--database-url', url]);
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/event id\s+stream\s+key\s+waiting\s+parked at\s+error/);
    expect(run.stdout).toMatch(
      new RegExp(`big-1\\s+${stream}\\s+c-1\\s+2\\s+\\S+Z\\s+PayloadTooLargeError: The entry for stream`),
    );
    expect(run.stderr).toMatch(/^1 outbox event\(s\) parked \(big-1\): fix the cause, then outbox.republishParked/);
    const json = JSON.parse((await runCli(['outbox', '--database-url', url, '--json'])).stdout) as { parked: unknown[] };
    expect(json.parked).toEqual([
      expect.objectContaining({ eventId: 'big-1', stream, partitionKey: 'c-1', attempts: 1, waiting: 2 }),
    ]);
    expect((await runCli(['outbox', '--database-url', url, '--stream', 'elsewhere'])).code).toBe(0);
    // It reads only PostgreSQL: a Redis outage (when events pile up) does not stop it.
    const redisAway = await runCli(['outbox', '--database-url', url, '--url', 'redis://127.0.0.1:1']);
    expect({ code: redisAway.code, stderr: redisAway.stderr }).toEqual({ code: 1, stderr: run.stderr });

    expect(await outbox.discardParked(['big-1'])).toEqual(['big-1']);
    const clear = await runCli(['outbox', '--database-url', url]);
    expect({ code: clear.code, stderr: clear.stderr }).toEqual({ code: 0, stderr: '' });
    expect(clear.stdout).toContain('(none)');

    const help = await runCli(['outbox', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: nest-redis-streams outbox --database-url <url>/);
    expect((await runCli(['--help'])).stdout).toMatch(/\n  outbox +outbox events parked by the relay/);

    const bad = await runCli(['outbox', '--database-url', url, '--limit', '0']);
    expect({ code: bad.code, stderr: bad.stderr }).toEqual({
      code: 2,
      stderr: '--limit must be a whole number >= 1, got "0".\n',
    });
  });
});
