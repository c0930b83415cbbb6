import { Outbox, pgDatabase, applyMigrations } from 'nest-redis-streams/database';
import type { Pool } from 'pg';
import { groupMembersKey, partitionOwnerKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { createDatabase, testPool, usePostgresServer } from '../inbox/support/databases.js';
import { redisClient, unique } from '../support/helpers.js';
import { type CliRun, runCli } from './run-cli.js';

usePostgresServer();
const redis = redisClient();
const pools: Pool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.end()));
  await redis.quit();
});

/**
 * What a hostile name can carry: clear screen, a colour, a carriage return that rewrites the line,
 * a bell, a C1 CSI, DEL and a right-to-left override. None of it may reach the terminal raw.
 */
const HOSTILE = '\x1b[2J\x1b[31mok\r\x07\x9b1m\x7f\u202e';
// eslint-disable-next-line no-control-regex
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/** The first raw control character of `text` with what surrounds it, or null. */
function rawControl(text: string): string | null {
  const at = text.search(RAW);
  return at < 0 ? null : JSON.stringify(text.slice(Math.max(0, at - 30), at + 10));
}

/** Runs the command and checks that neither stdout nor stderr holds a raw control character. */
async function clean(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  const run = await runCli(args, env);
  expect({ args, stdout: rawControl(run.stdout), stderr: rawControl(run.stderr) }).toEqual({ args, stdout: null, stderr: null });
  return run;
}

/** A dead letter as the transport writes it, every text field hostile. */
async function deadLetter(stream: string, group: string): Promise<string> {
  const meta = ['dlq:reason', 'max-deliveries', 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', group];
  meta.push('dlq:consumer', `c${HOSTILE}`, 'dlq:error', `boom${HOSTILE}`, 'dlq:error_class', `E${HOSTILE}`);
  meta.push('dlq:deliveries', '5', 'dlq:time', String(Date.now()), `f${HOSTILE}`, `v${HOSTILE}`);
  return (await redis.xadd(`${stream}:dlq`, '*', ...meta)) as string;
}

describe('the CLI escapes control characters from Redis in every command (spawned binary)', () => {
  it('status, pending, dlq, setid, consumers, ownership and trim print names, payloads and errors escaped', async () => {
    const stream = `${unique('esc')}${HOSTILE}`;
    const group = `g${HOSTILE}`;
    const consumer = `c${HOSTILE}`;
    await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
    await redis.xgroup('CREATE', stream, `idle${HOSTILE}`, '$');
    for (let i = 0; i < 3; i++) await redis.xadd(stream, '*', `n${HOSTILE}`, `v${i}${HOSTILE}`);
    await redis.xreadgroup('GROUP', group, consumer, 'COUNT', 2, 'STREAMS', stream, '>');
    await redis.xgroup('CREATECONSUMER', stream, group, `spare${HOSTILE}`);
    // Exclusive ownership of the stream itself (one partition) by a member with a hostile name.
    const until = Date.now() + 60_000;
    await redis.hset(partitionOwnerKey(stream, group), 'owner', `pod${HOSTILE}`, 'gen', '3', 'until', String(until));
    await redis.zadd(groupMembersKey(stream, group), until, `pod${HOSTILE}`);
    const [first, second] = [await deadLetter(stream, group), await deadLetter(stream, group)];

    const status = await clean(['status', '--stream', stream]);
    expect(status.code).toBe(0);
    // The names are there, escaped, in the table and in the badge and ownership lines.
    expect(status.stdout).toContain('\\x1b[2J\\x1b[31mok\\x0d\\x07\\x9b1m\\x7f\\u202e');
    expect(status.stdout).toMatch(/^! .*no-consumers/m);
    expect(status.stdout).toMatch(/^~ .*exclusive ownership/m);
    const gate = await clean(['status', '--stream', stream, '--max-pending', '0']);
    expect(gate.code).toBe(1);
    expect(gate.stderr).toContain('pending entries is 2, above --max-pending 0');
    const json = await clean(['status', '--stream', stream, '--json']);
    // --json keeps the exact names: escapes are JSON's own.
    expect(JSON.parse(json.stdout).streams[0]).toMatchObject({ stream });

    for (const args of [
      ['pending', stream, group],
      ['pending', stream, group, '--json'],
      ['dlq', 'list', stream],
      ['dlq', 'list', stream, '--json'],
      ['dlq', 'show', stream, first],
      ['dlq', 'show', stream, first, '--json'],
      ['setid', stream, group, '--end', '--dry-run'],
      ['consumers', stream, group],
      ['consumers', stream, group, '--json'],
      ['ownership', stream, group],
      ['ownership', stream, group, '--json'],
    ]) {
      expect({ args, code: (await clean(args)).code }).toEqual({ args, code: 0 });
    }
    expect((await clean(['ownership', stream, group, '--max-unowned', '0', '--partitions', '2'])).code).toBe(1);
    expect((await clean(['dlq', 'show', stream, '1-1'])).code).toBe(3);
    expect((await clean(['dlq', 'redrive', stream, first])).code).toBe(0);
    expect((await clean(['dlq', 'discard', stream, second])).code).toBe(0);
    await deadLetter(stream, group);
    expect((await clean(['dlq', 'redrive', stream, '--all'])).code).toBe(0);
    expect((await clean(['setid', stream, group, '--end', '--force'])).code).toBe(0);
    expect((await clean(['setid', stream, group, '--end', '--force', '--json'])).code).toBe(0);
    const handOver = ['consumers', stream, group, '--delete', consumer, '--hand-over-to', `spare${HOSTILE}`];
    expect((await clean(handOver)).code).toBe(0);
    expect((await clean(['consumers', stream, `nope${HOSTILE}`])).code).toBe(3);
    expect((await clean(['trim', stream, '--safe', '--max-len', '1000'])).code).toBe(0);
    expect((await clean([`frob${HOSTILE}`])).code).toBe(2);
  }, 120_000);

  it('a line feed inside a name, payload or dead-letter reason never starts a line of its own', async () => {
    const forged = '\nFORGED breach line';
    const stream = `${unique('esc-lf')}${forged}`;
    const group = `g${forged}`;
    await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
    await redis.xadd(stream, '*', `n${forged}`, `v${forged}`);
    await redis.xreadgroup('GROUP', group, `c${forged}`, 'STREAMS', stream, '>');
    const meta = ['dlq:reason', `r${forged}`, 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', group];
    meta.push('dlq:consumer', `c${forged}`, 'dlq:error', `boom${forged}`, `f${forged}`, `v${forged}`);
    const letter = (await redis.xadd(`${stream}:dlq`, '*', ...meta)) as string;
    for (const args of [
      ['status', '--stream', stream],
      ['pending', stream, group],
      ['dlq', 'list', stream],
      ['dlq', 'show', stream, letter],
      ['consumers', stream, group],
      ['setid', stream, group, '--end', '--dry-run'],
      ['pending', stream, `nope${forged}`],
    ]) {
      const run = await runCli(args);
      const lines = `${run.stdout}\n${run.stderr}`.split('\n').filter((l) => l.startsWith('FORGED'));
      expect({ args, forgedLines: lines }).toEqual({ args, forgedLines: [] });
    }
  }, 120_000);

  it('reconcile prints hostile stream, group, handler and event ids escaped', async () => {
    const url = await createDatabase();
    const pool = testPool(url, 2);
    pools.push(pool);
    const db = pgDatabase(pool);
    await applyMigrations(db);
    const stream = `${unique('esc-reconcile')}${HOSTILE}`;
    const outbox = new Outbox(db);
    await db.transaction((tx) => outbox.add(tx, stream, { id: 1 }, { eventId: `e${HOSTILE}` }));
    const args = ['reconcile', '--database-url', url, '--stream', stream, '--group', `g${HOSTILE}`, '--handler', `h${HOSTILE}`];
    const run = await clean(args);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('1 missing (e\\x1b[2J');
    expect((await clean([...args, '--json'])).code).toBe(1);
  }, 60_000);
});
