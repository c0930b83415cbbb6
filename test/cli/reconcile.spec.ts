import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { applyMigrations, Inbox, type InboxDelivery, Outbox, pgDatabase, type SqlDatabase } from 'nest-redis-streams/database';
import type { Pool } from 'pg';
import { redisClient, unique } from '../support/helpers.js';
import { createDatabase, testPool, usePostgresServer } from '../inbox/support/databases.js';
import { CLI, type CliRun, runCli } from './run-cli.js';

usePostgresServer();
// Each test creates a database and spawns the binary up to 6 times; on 2 busy cores one start can
// take seconds.
jest.setTimeout(120_000);

const redis = redisClient();
const pools: Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await redis.quit();
});

/** A fresh migrated database on the file's PostgreSQL server, with its URL for the binary. */
async function database(): Promise<{ url: string; db: SqlDatabase<any> }> {
  const url = await createDatabase();
  const pool = testPool(url, 2);
  pools.push(pool);
  const db = pgDatabase(pool);
  await applyMigrations(db);
  return { url, db };
}

/** Outbox rows for `ids` on `stream`, written as a producer writes them. */
async function published(db: SqlDatabase<any>, stream: string, ids: string[]): Promise<void> {
  const outbox = new Outbox(db);
  await db.transaction(async (tx) => {
    for (const id of ids) await outbox.add(tx, stream, { id }, { eventId: id });
  });
}

/** The inbox row a handler records when the event's effect commits, delivered from `stream`. */
async function applied(db: SqlDatabase<any>, stream: string, group: string, eventId: string): Promise<void> {
  const delivery: InboxDelivery = {
    getStream: () => stream,
    getGroup: () => group,
    getEventId: () => eventId,
    getEntryId: () => '1-0',
  };
  const outcome = await new Inbox(db).run(delivery, 'payments.charge', async () => undefined);
  expect(outcome.status).toBe('applied');
}

/** A dead letter as the transport parks it: the original fields plus dlq metadata naming the group. */
async function parked(stream: string, group: string, eventId: string): Promise<void> {
  await redis.xadd(`${stream}:dlq`, '*', 'event_id', eventId, 'data', '{}', 'dlq:reason', 'non-retryable', 'dlq:group', group);
}

const target = (url: string, stream: string) => [
  'reconcile',
  '--database-url',
  url,
  '--stream',
  stream,
  '--group',
  'payments',
  '--handler',
  'payments.charge',
];

describe('nest-redis-streams reconcile (the compiled binary, against PostgreSQL 15 and Redis)', () => {
  it('exits 0 when every outbox event of the window has one effect or is dead-lettered', async () => {
    const { url, db } = await database();
    const stream = unique('reconcile');
    await published(db, stream, ['o-1', 'o-2', 'o-3']);
    await published(db, unique('other'), ['elsewhere']);
    await applied(db, stream, 'payments', 'o-1');
    // Partitions deliver under their own stream keys: still the group's effect.
    await applied(db, `${stream}:{${stream}:2}`, 'payments', 'o-2');
    await parked(stream, 'payments', 'o-3');

    const run = await runCli([...target(url, stream), '--since', '1h']);
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(run.stdout).toContain('expected 3, applied once 2, missing 0, duplicated 0, dead-lettered 1');
    expect(run.stdout).toMatch(/event id\s+status\s+effects/);
    expect(run.stdout).toMatch(/o-3\s+dead-lettered\s+0/);

    const json = JSON.parse((await runCli([...target(url, stream), '--json'])).stdout);
    expect(json).toMatchObject({
      stream,
      group: 'payments',
      handler: 'payments.charge',
      deadLetterStream: `${stream}:dlq`,
      expected: 3,
      appliedOnce: 2,
      missing: [],
      duplicated: [],
      deadLettered: ['o-3'],
    });
  });

  it('exits 1 naming a missing and a duplicated event; --since/--until bound the window', async () => {
    const { url, db } = await database();
    const stream = unique('reconcile');
    await published(db, stream, ['o-1', 'o-2', 'o-3']);
    await applied(db, stream, 'payments', 'o-1');
    // Re-published to another stream key (a partition count change) and charged there again.
    await applied(db, stream, 'payments', 'o-2');
    await applied(db, `${stream}:moved`, 'payments', 'o-2');
    // o-3 has an effect in another group and a dead letter from a third: for payments it is missing.
    await applied(db, stream, 'audit', 'o-3');
    await parked(stream, 'shipping', 'o-3');

    const run = await runCli(target(url, stream));
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `Not reconciled (${stream} -> payments / payments.charge): 1 missing (o-3); 1 duplicated (o-2 x2).\n`,
    );
    expect(run.stdout).toMatch(/o-3\s+missing\s+0/);
    expect(run.stdout).toMatch(/o-2\s+duplicated\s+2/);

    const json = JSON.parse((await runCli([...target(url, stream), '--json'])).stdout);
    expect(json).toMatchObject({ expected: 3, appliedOnce: 1, missing: ['o-3'], duplicated: [{ eventId: 'o-2', effects: 2 }] });

    // A window before the events were written holds none of them.
    const earlier = await runCli([...target(url, stream), '--since', '2h', '--until', '1h']);
    expect(earlier.code).toBe(0);
    expect(earlier.stdout).toContain('expected 0, applied once 0, missing 0');
  });

  it('refuses bad arguments with exit 2, naming the value', async () => {
    const url = 'postgres://postgres@127.0.0.1:5432/postgres';
    const cases: Array<[string[], RegExp]> = [
      [['reconcile', '--stream', 'orders', '--database-url', url], /"reconcile" needs --group <group> --handler <handler>/],
      [[...target(url, 'orders'), '--since', 'last tuesday'], /--since must be a time .*; got "last tuesday"/],
      [[...target(url, 'orders'), '--since', '1h', '--until', '2h'], /--since \(.*\) must be before --until/],
      // A safe integer past what a Date holds (it used to reach toISOString: exit 4, "Invalid time value").
      [[...target(url, 'orders'), '--since', '9000000000000000'], /--since must be a time .*; got "9000000000000000"/],
      [
        [...target('mysql://app:secret@db/shop', 'orders')],
        /--database-url must be a postgres:\/\/ .*got "mysql:\/\/app:\*\*\*@db\/shop"/,
      ],
      [[...target(url, 'orders'), 'extra'], /"reconcile" takes options only; unexpected "extra"/],
      [[...target(url, 'orders'), '--bogus'], /Unknown option '--bogus'.*reconcile --help/],
    ];
    for (const [args, message] of cases) {
      const run = await runCli(args);
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
      expect(run.stderr).toMatch(message);
    }
    const noUrl = await runCli(['reconcile', '--stream', 'orders', '--group', 'g', '--handler', 'h'], { DATABASE_URL: '' });
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr).toContain('--database-url <postgres://user@host:5432/db> is required (or set DATABASE_URL)');
    const help = await runCli(['reconcile', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Usage: nest-redis-streams reconcile --database-url <url> --stream <key>/);
  });

  it('exits 4 saying where PostgreSQL was expected, or that pg must be installed', async () => {
    const down = await runCli(target('postgres://postgres:secret@127.0.0.1:1/shop', 'orders'));
    expect(down.code).toBe(4);
    expect(down.stderr).toContain('Could not reach PostgreSQL at postgres://postgres:***@127.0.0.1:1/shop');
    expect(down.stderr).not.toContain('secret');

    const { url } = await database();
    const withoutPg = await runWithoutPg(target(url, 'orders'));
    expect(withoutPg.code).toBe(4);
    expect(withoutPg.stderr).toContain('node-postgres, an optional peer dependency that is not installed: run "npm install pg"');
  });
});

/**
 * Runs a copy of the compiled binary in a folder whose node_modules has every package of this
 * repository except `pg`, as in an application that never installed it.
 */
async function runWithoutPg(args: string[]): Promise<CliRun> {
  const root = mkdtempSync(join(tmpdir(), 'nrs-no-pg-'));
  try {
    const libDist = dirname(dirname(CLI));
    const lib = join(root, 'lib');
    cpSync(libDist, join(lib, 'dist'), { recursive: true, filter: (src) => !src.startsWith(join(libDist, 'cjs')) });
    cpSync(join(dirname(libDist), 'package.json'), join(lib, 'package.json'));
    const modules = join(dirname(dirname(dirname(libDist))), 'node_modules');
    mkdirSync(join(root, 'node_modules'));
    for (const name of readdirSync(modules)) {
      if (name !== 'pg' && name !== '.bin') symlinkSync(join(modules, name), join(root, 'node_modules', name));
    }
    return await new Promise((resolve) => {
      execFile(process.execPath, [join(lib, 'dist/cli/main.js'), ...args], { timeout: 20_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      });
    });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
