import { redisClient, unique } from '../support/helpers.js';
import { runBounded, runCli } from './run-cli.js';
import { COMMANDS } from '../../libs/nest-redis-streams/src/cli/run-cli.js';

const redis = redisClient();
afterAll(() => redis.quit());

/** Nothing listens there: a command that connects before checking its arguments exits 4, not 2. */
const NOWHERE = 'redis://127.0.0.1:1';

/** A well-formed failure-group fingerprint (no such group needs to exist: the checks come first). */
const FINGERPRINT = '0123456789ab';
/** A bad value for every option that takes one, per command, and what its message must name. */
function badOptions(stream: string): Array<[string[], string]> {
  const reconcile = [
    'reconcile',
    '--stream',
    stream,
    '--group',
    'g',
    '--handler',
    'h',
    '--database-url',
    'postgres://app@db/shop',
  ];
  return [
    [['status', '--max-lag', 'x'], '"x"'],
    [['status', '--max-pending=-1'], '"-1"'],
    [['status', '--max-idle', '1.5'], '"1.5"'],
    [['status', '--max-dead-letters', 'many'], '"many"'],
    [['pending', stream, 'g', '--count', '0'], '"0"'],
    [['pending', stream, 'g', '--after', 'x'], '"x"'],
    [['pending', stream, 'g', '--from', 'yesterday'], 'yesterday'],
    [['pending', stream, 'g', '--to', 'later'], 'later'],
    [['consumers', stream, 'g', '--delete', 'c1', '--hand-over-to', 'c1'], '"c1"'],
    [['ownership', stream, 'g', '--partitions', '0'], '"0"'],
    [['ownership', stream, 'g', '--partitions', '99999'], '"99999"'],
    [['ownership', stream, 'g', '--max-unowned', 'none'], '"none"'],
    [['trim', stream, '--safe', '--max-len', 'lots'], '"lots"'],
    [['trim', stream, '--safe', '--min-age', '0'], '"0"'],
    [['setid', stream, 'g', '--id', 'abc'], 'abc'],
    [['setid', stream, 'g', '--time', 'noon'], 'noon'],
    [['search', stream, '--where', 'payload.n =='], 'column'],
    [['search', stream, '--since', 'last-week'], 'last-week'],
    [['search', stream, '--until', 'soon'], 'soon'],
    [['search', stream, '--limit', '0'], '"0"'],
    [['search', stream, '--limit', '999999999'], '999999999'],
    [['search', stream, '--budget-entries', 'x'], '"x"'],
    [['search', stream, '--budget-ms', '0'], '"0"'],
    [['search', stream, '--cursor', 'junk'], 'cursor'],
    [['search', stream, '--partitions', '99999'], '99999'],
    [['search', stream, '--group', ''], 'group must be a non-empty string'],
    [['blocked', stream, '--partitions', '99999'], '"99999"'],
    [['doctor', '--role', 'admin'], '"admin"'],
    [['outbox', '--limit', '0', '--database-url', 'postgres://app@db/shop'], '"0"'],
    [['outbox', '--database-url', 'mysql://app@db/shop'], 'got "mysql://db/shop"'],
    [[...reconcile, '--since', 'ages'], '"ages"'],
    [[...reconcile, '--until', 'then'], '"then"'],
    [['dlq', 'list', stream, '--cause', 'nope'], '"nope"'],
    [['dlq', 'list', stream, '--count', '0'], '"0"'],
    [['dlq', 'list', stream, '--after', 'x'], '"x"'],
    [['dlq', 'redrive', stream, '--all', '--up-to', 'x'], '"x"'],
    [['dlq', 'redrive', stream, '--all', '--dry-run', '--key', ''], '""'],
    [['dlq', 'redrive', stream, '--cause', FINGERPRINT, '--canary', '0'], 'got 0'],
    [['dlq', 'redrive', stream, '--cause', FINGERPRINT, '--canary', '2', '--rate', 'fast'], '"fast"'],
    [['dlq', 'redrive', stream, '--cause', FINGERPRINT, '--canary', '2', '--max-failure-ratio', '2'], 'got 2'],
    [['dlq', 'redrive', stream, '--cause', FINGERPRINT, '--canary', '2', '--settle-ms', '5'], 'got 5'],
    [['scheduled', stream, '--count', '0'], '"0"'],
  ];
}

describe("the CLI's exit codes follow the README's table (0 ok, 1 limit, 2 usage, 3 refused/not found, 4 unreachable)", () => {
  it('a stream id past 2^64 - 1 is a usage error (2) naming the value, wherever an id is taken', async () => {
    const stream = unique('exit');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const cases: string[][] = [
      ['setid', stream, 'g', '--id', '99999999999999999999'],
      ['setid', stream, 'g', '--id', '1-99999999999999999999'],
      ['pending', stream, 'g', '--after', '99999999999999999999-0'],
      ['dlq', 'show', stream, '99999999999999999999-0'],
      ['dlq', 'list', stream, '--after', '18446744073709551616-0'],
    ];
    for (const args of cases) {
      const run = await runCli(args);
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
      expect(run.stderr).toMatch(
        /"\d+(-\d+)?" is out of range: both parts of a stream id \(<ms>-<seq>\) are at most 18446744073709551615\./,
      );
      expect(run.stderr).not.toMatch(/ERR|Invalid stream ID/);
      // Checked before connecting: the same with Redis unreachable.
      expect({ args, code: (await runCli([...args, '--url', NOWHERE])).code }).toEqual({ args, code: 2 });
    }
    // The largest id is still one.
    expect((await runCli(['setid', stream, 'g', '--id', '18446744073709551615-18446744073709551615', '--dry-run'])).code).toBe(0);
    // A time past what a millisecond count can say is refused the same way.
    const time = await runCli(['setid', stream, 'g', '--time', '99999999999999999999', '--dry-run']);
    expect(time.code).toBe(2);
    expect(time.stderr).toContain('A time must be milliseconds since the epoch or an ISO date');
  }, 60_000);

  it('a bad value of any option is a usage error (2) naming it, before connecting: Redis reachable or not', async () => {
    const cases = badOptions(unique('exit-options'));
    // Every command is in the table.
    expect([...new Set(cases.map(([args]) => args[0]))].sort()).toEqual(COMMANDS.map((c) => c.name).sort());
    const jobs = cases.flatMap(([args, named]) =>
      [process.env.REDIS_URL as string, NOWHERE].map((url) => async () => {
        const run = await runCli([...args, '--url', url]);
        return { args, url, code: run.code, named: run.stderr.includes(named), stderr: run.stderr };
      }),
    );
    const runs = await runBounded(jobs);
    expect(runs.filter((r) => r.code !== 2 || !r.named)).toEqual([]);
  }, 300_000);

  it('a missing stream or group is "not found" (3): consumers, pending, setid, trim, status --stream', async () => {
    const missing = unique('missing');
    for (const args of [
      ['consumers', missing, 'g'],
      ['pending', missing, 'g'],
      ['setid', missing, 'g', '--end'],
      ['trim', missing, '--safe', '--max-len', '10'],
      ['status', '--stream', missing, '--max-lag', '0'],
    ]) {
      const run = await runCli(args);
      expect({ args, code: run.code }).toEqual({ args, code: 3 });
      expect(run.stderr).toContain(`"${missing}"`);
    }
  }, 60_000);

  it('no arguments prints the usage on stderr and exits 2; --help exits 0', async () => {
    const none = await runCli([]);
    expect(none.code).toBe(2);
    expect(none.stdout).toBe('');
    expect(none.stderr).toContain('Usage: nest-redis-streams <command>');
    expect(none.stderr).toContain('No command given: name one of status, pending');
    expect((await runCli(['--help'])).code).toBe(0);
  }, 60_000);

  it('reconcile without a database URL is a usage error (2), whether Redis answers or not', async () => {
    const args = ['reconcile', '--stream', 'orders', '--group', 'payments', '--handler', 'charge'];
    for (const url of [process.env.REDIS_URL as string, NOWHERE]) {
      const run = await runCli([...args, '--url', url], { DATABASE_URL: '' });
      expect({ url, code: run.code }).toEqual({ url, code: 2 });
      expect(run.stderr).toContain('--database-url <postgres://user@host:5432/db> is required (or set DATABASE_URL).');
    }
  }, 60_000);

  it('outbox without a database URL is a usage error (2), whether Redis answers or not', async () => {
    for (const url of [process.env.REDIS_URL as string, NOWHERE]) {
      const run = await runCli(['outbox', '--url', url], { DATABASE_URL: '' });
      expect({ url, code: run.code, stderr: run.stderr.trim() }).toEqual({
        url,
        code: 2,
        stderr: '--database-url <postgres://user@host:5432/db> is required (or set DATABASE_URL).',
      });
    }
  }, 60_000);

  it('a key that is not a stream is "not found" (3) naming its type, trim too; a time Date.parse would guess is 2', async () => {
    const hash = unique('exit-hash');
    await redis.hset(hash, 'a', '1');
    for (const args of [
      ['trim', hash, '--safe', '--max-len', '10'],
      ['pending', hash, 'g'],
      ['consumers', hash, 'g'],
    ]) {
      const run = await runCli(args);
      expect({ args, code: run.code, stderr: run.stderr.trim() }).toEqual({
        args,
        code: 3,
        stderr: `Key "${hash}" holds a hash, not a stream.`,
      });
    }
    expect(await redis.hget(hash, 'a')).toBe('1');
    const stream = unique('exit-time');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    // A dead-letter stream that is not a stream is named, not the stream beside it.
    for (const args of [
      ['dlq', 'list', stream, '--dead-letter-stream', hash],
      ['dlq', 'redrive', stream, '--all', '--dead-letter-stream', hash],
    ]) {
      const run = await runCli(args);
      expect({ args, code: run.code, stderr: run.stderr.trim() }).toEqual({
        args,
        code: 3,
        stderr: `Key "${hash}" holds a hash, not a stream.`,
      });
    }
    for (const time of ['May 1', '1,2']) {
      const run = await runCli(['setid', stream, 'g', '--time', time, '--url', NOWHERE]);
      expect({ time, code: run.code }).toEqual({ time, code: 2 });
      expect(run.stderr).toContain(`or an ISO date (2024-05-01T12:00:00Z), got "${time}".`);
    }
  }, 60_000);

  it('a --url whose database the server does not have exits 4 naming it, instead of acting on database 0', async () => {
    const url = `${(process.env.REDIS_URL as string).replace(/\/\d*$/, '')}/99`;
    const run = await runCli(['status', '--url', url]);
    expect({ code: run.code, stdout: run.stdout }).toEqual({ code: 4, stdout: '' });
    expect(run.stderr).toContain(`Redis at ${url} refused database 99 (ERR DB index is out of range)`);
  }, 60_000);

  it('a command the ACL refuses is "refused" (3) with the ACL SETUSER line that grants it, not a raw NOPERM (4)', async () => {
    const stream = unique('exit-acl');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const user = unique('cli-acl').replace(/[^a-z0-9-]/gi, '-');
    await redis.call('ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-xinfo|consumers');
    try {
      const url = (process.env.REDIS_URL as string).replace('redis://', `redis://${user}:pw@`);
      const run = await runCli(['consumers', stream, 'g', '--url', url]);
      expect(run.code).toBe(3);
      expect(run.stderr).toContain(`grant it with \`ACL SETUSER ${user} +xinfo|consumers\``);
    } finally {
      await redis.call('ACL', 'DELUSER', user);
    }
  }, 60_000);

  it('Redis unreachable exits 4 with a message that says where and to pass --url', async () => {
    const run = await runCli(['status', '--url', NOWHERE]);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain(`Could not reach Redis at ${NOWHERE}`);
    expect(run.stderr).toContain('pass --url redis://host:6379 (or set REDIS_URL)');
    expect(run.stderr).not.toContain('"connection" option');
  }, 60_000);

  it('a malformed --url, REDIS_URL, --cluster seed or database URL is a usage error (2) naming it, whether Redis answers or not', async () => {
    const here = (process.env.REDIS_URL as string).replace(/\/\d*$/, '');
    const cases: Array<[string[], NodeJS.ProcessEnv, string]> = [];
    for (const good of [here, NOWHERE]) {
      cases.push(
        [
          ['status', '--cluster', '--url', `${good},redis://h:x`],
          {},
          '--url is not a valid URL: "redis://h:x". Check the host and the port',
        ],
        [
          ['status', '--cluster', '--url', `${good},h2:7001`],
          {},
          '--url must be a redis:// or rediss:// URL (several, comma-separated, with --cluster), got "h2:7001"',
        ],
        [['pending', 's', 'g', '--url', `${good}:99999`], {}, `--url is not a valid URL: "${good}:99999"`],
        [['search', 's', '--url', `${good},${good}`], {}, 'several seed nodes need --cluster'],
        [['search', 's'], { REDIS_URL: `${good}/db` }, `REDIS_URL names a database that is not a number: "${good}/db"`],
        [
          ['outbox', '--url', good],
          { DATABASE_URL: 'postgres://app@db:port/shop' },
          'DATABASE_URL is not a valid URL: "postgres://db:port/shop"',
        ],
        [
          [
            'reconcile',
            '--stream',
            's',
            '--group',
            'g',
            '--handler',
            'h',
            '--url',
            good,
            '--database-url',
            'postgres://[db/shop',
          ],
          {},
          '--database-url is not a valid URL',
        ],
      );
    }
    for (const [args, env, message] of cases) {
      const run = await runCli(args, env);
      expect({ args, env, code: run.code, stdout: run.stdout }).toEqual({ args, env, code: 2, stdout: '' });
      expect(run.stderr).toContain(message);
    }
  }, 120_000);
});
