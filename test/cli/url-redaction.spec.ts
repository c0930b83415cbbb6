import { redisClient, redisUrl, unique } from '../support/helpers.js';
import { type CliRun, runBounded, runCli } from './run-cli.js';

const redis = redisClient();
afterAll(() => redis.quit());

/**
 * A password with `@` and `:` in it, written into URLs as is (not percent-encoded): the
 * credentials end at the last `@`. None of its parts may appear in anything the CLI prints.
 */
const PASSWORD = 'PWONE@PWTWO:PWTHREE';
const LEAK = /PWONE|PWTWO|PWTHREE/;
const USER = unique('nrs-redact').replace(/[^a-z0-9-]/gi, '-');

const { hostname: host, port } = new URL(redisUrl());
const REACHABLE = `${host}:${port}`;
/** Nothing listens there. */
const UNREACHABLE = '127.0.0.1:1';

/** Every spelling of a Redis URL a user may write, with the password in it. */
const SPELLINGS = ['redis://', 'Redis://', 'rediss://', 'valkey://', 'valkeys://', 'unix://'];

/** Each command with arguments that pass its own checks (so each reaches the connection). */
function commands(stream: string): string[][] {
  return [
    ['status', '--stream', stream, '--max-lag', '0'],
    ['pending', stream, 'g'],
    ['consumers', stream, 'g'],
    ['dlq', 'groups', stream],
    ['dlq', 'list', stream],
    ['dlq', 'show', stream, '1-0'],
    ['dlq', 'redrive', stream, '--all', '--dry-run'],
    ['dlq', 'discard', stream, '1-0'],
    ['scheduled', stream],
    ['blocked', stream],
    ['search', stream],
    ['setid', stream, 'g', '--end', '--dry-run'],
    ['ownership', stream, 'g'],
    ['trim', stream, '--safe', '--max-len', '1000'],
    ['doctor', '--role', 'operator', '--stream', stream],
    // Read PostgreSQL (nothing listens there: 4 either way), and check the Redis URL all the same.
    ['outbox', '--database-url', NO_DATABASE],
    ['reconcile', '--stream', stream, '--group', 'g', '--handler', 'h', '--database-url', NO_DATABASE],
  ];
}

/** Nothing listens there. */
const NO_DATABASE = 'postgres://app@127.0.0.1:1/shop';

/**
 * Which runs: every command on Redis reachable and unreachable (its spelling redis:// or Redis://,
 * in turn), and every spelling on doctor, outbox and status; a spelling refused before connecting
 * (valkey://, valkeys://, unix://) on one address each, in turn. Each run spawns the binary (half a
 * second of CPU): every command x every spelling x both addresses took 6 minutes on a busy machine,
 * for no more coverage of the one redaction and the one URL check they all go through.
 */
const EVERY_SPELLING = new Set(['doctor', 'outbox', 'status']);
const CONNECTING = ['redis://', 'Redis://'];
const REFUSED = ['valkey://', 'valkeys://', 'unix://'];

function cases(stream: string): Array<{ args: string[]; url: string }> {
  return commands(stream).flatMap((args, i) =>
    (EVERY_SPELLING.has(args[0]) ? SPELLINGS : [CONNECTING[i % 2]]).flatMap((scheme, s) =>
      (REFUSED.includes(scheme) ? [[REACHABLE, UNREACHABLE][(i + s) % 2]] : [REACHABLE, UNREACHABLE]).map((address) => ({
        args,
        url: `${scheme}${USER}:${PASSWORD}@${address}`,
      })),
    ),
  );
}

const leaked = (run: CliRun) => LEAK.test(run.stdout) || LEAK.test(run.stderr);

describe('the CLI never prints a password, whatever the URL spelling, command or outcome', () => {
  beforeAll(async () => {
    await redis.call('ACL', 'SETUSER', USER, 'on', `>${PASSWORD}`, '~*', '&*', '+@all');
  });
  afterAll(async () => {
    await redis.call('ACL', 'DELUSER', USER);
  });

  it('every command on redis:// and Redis://, every spelling on doctor, outbox and status, Redis reachable or not, through --url and REDIS_URL', async () => {
    const stream = unique('redact');
    await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    await redis.xadd(stream, '*', 'data', '{"n":1}');
    const all = cases(stream);
    // Half the cases give the URL by REDIS_URL, half by --url: both reach the same checks.
    const run =
      ({ args, url }: (typeof all)[number], i: number) =>
      async () => {
        const out = i % 2 === 0 ? await runCli([...args, '--url', url]) : await runCli(args, { REDIS_URL: url });
        return { args: args.join(' '), url, run: out };
      };
    // rediss:// to a server without TLS waits for its connect timeout (10 s) doing nothing: those
    // wait side by side, beside the rest (six at a time).
    const slow = (url: string) => url.startsWith('rediss://') && url.endsWith(REACHABLE);
    const [waiting, rest] = await Promise.all([
      runBounded(
        all.map(run).filter((_, i) => slow(all[i].url)),
        all.length,
      ),
      runBounded(all.map(run).filter((_, i) => !slow(all[i].url))),
    ]);
    const runs = [...waiting, ...rest];
    // What ran: every command against both addresses, every spelling on the three commands.
    for (const args of commands(stream).map((a) => a.join(' '))) {
      const addresses = new Set(runs.filter((r) => r.args === args).map((r) => r.url.slice(r.url.lastIndexOf('@') + 1)));
      expect({ args, addresses }).toEqual({ args, addresses: new Set([REACHABLE, UNREACHABLE]) });
    }
    for (const scheme of SPELLINGS) {
      const names = new Set(runs.filter((r) => r.url.startsWith(`${scheme}${USER}`)).map((r) => r.args.split(' ')[0]));
      expect({ scheme, names: [...EVERY_SPELLING].filter((n) => names.has(n)) }).toEqual({ scheme, names: [...EVERY_SPELLING] });
    }
    expect(runs.filter((r) => leaked(r.run)).map(({ args, url, run: out }) => ({ args, url, ...out }))).toEqual([]);
    // The cases went where they should: redis:// in either case ran the command against the
    // reachable server (0, or 1 and 3 for a limit or a missing record), the other schemes were
    // refused as usage (2), and every failure to connect (4) names the URL without its password.
    const database = (r: (typeof runs)[number]) => /^(outbox|reconcile) /.test(r.args);
    const codes = (scheme: string, address: string, onRedis = true) =>
      new Set(
        runs
          .filter((r) => r.url.startsWith(`${scheme}${USER}`) && r.url.endsWith(address) && database(r) !== onRedis)
          .map((r) => r.run.code),
      );
    for (const scheme of CONNECTING) {
      expect([...codes(scheme, REACHABLE)].filter((code) => code !== 0 && code !== 1 && code !== 3)).toEqual([]);
      expect([...codes(scheme, UNREACHABLE)]).toEqual([4]);
      // PostgreSQL is unreachable: the commands that read it fail (4) after the URL checks.
      expect([...codes(scheme, REACHABLE, false), ...codes(scheme, UNREACHABLE, false)]).toEqual([4, 4]);
    }
    for (const scheme of REFUSED) {
      expect(new Set(runs.filter((r) => r.url.startsWith(`${scheme}${USER}`)).map((r) => r.run.code))).toEqual(new Set([2]));
      expect(runs.find((r) => r.url.startsWith(scheme))!.run.stderr).toContain(
        `must be a redis:// or rediss:// URL (several, comma-separated, with --cluster), got "${scheme}${USER}:***@`,
      );
    }
    expect([...codes('rediss://', REACHABLE), ...codes('rediss://', REACHABLE, false)]).toEqual([4, 4]);
    const unreachable = runs.find((r) => r.url === `Redis://${USER}:${PASSWORD}@${UNREACHABLE}`)!;
    expect(unreachable.run.stderr).toContain(`Could not reach Redis at redis://${USER}:***@${UNREACHABLE} (`);
    expect(runs.filter((r) => /Unhandled error event/.test(r.run.stderr))).toEqual([]);
  }, 300_000);

  it('a wrong password, a malformed URL and a cluster seed list are named without the password too', async () => {
    const stream = unique('redact-bad');
    const cases: Array<[string[], number, string]> = [
      [
        ['status', '--url', `redis://${USER}:wrong${PASSWORD}@${REACHABLE}`],
        4,
        `Could not reach Redis at redis://${USER}:***@${REACHABLE} (`,
      ],
      [
        ['status', '--url', `redis://${USER}:${PASSWORD}@${host}:99999`],
        2,
        `--url is not a valid URL: "redis://${USER}:***@${host}:99999"`,
      ],
      [
        ['search', stream, '--url', `redis://${USER}:${PASSWORD}@${REACHABLE},redis://${REACHABLE}`],
        2,
        'several seed nodes need --cluster',
      ],
      [
        ['status', '--cluster', '--url', `redis://${USER}:${PASSWORD}@${REACHABLE},redis://${USER}:${PASSWORD}@h:x`],
        2,
        `--url is not a valid URL: "redis://${USER}:***@h:x"`,
      ],
      [
        ['status', '--cluster', '--url', `redis://${USER}:${PASSWORD}@${REACHABLE},valkey://${USER}:${PASSWORD}@h:1`],
        2,
        `got "valkey://${USER}:***@h:1" (Valkey is reached with redis://`,
      ],
      [
        ['status', '--url', `redis://${USER}:${PASSWORD}@${REACHABLE}/nine`],
        2,
        `--url names a database that is not a number: "redis://${USER}:***@${REACHABLE}/nine"`,
      ],
    ];
    const runs = await runBounded(
      cases.map(
        ([args]) =>
          () =>
            runCli(args),
      ),
    );
    runs.forEach((run, i) => {
      const [args, code, message] = cases[i];
      expect({ args, code: run.code, leaked: leaked(run) }).toEqual({ args, code, leaked: false });
      expect(run.stderr).toContain(message);
    });
  }, 300_000);

  it('a PostgreSQL URL (outbox, reconcile) is named without its password, reachable Redis or not', async () => {
    const target = ['--stream', 'orders', '--group', 'g', '--handler', 'h'];
    const cases: Array<[string[], NodeJS.ProcessEnv, number, string]> = [];
    for (const scheme of ['postgres://', 'Postgres://', 'postgresql://']) {
      const url = `${scheme}app:${PASSWORD}@127.0.0.1:1/shop`;
      const shown = `Could not reach PostgreSQL at ${scheme}app:***@127.0.0.1:1/shop (`;
      for (const redisAt of [REACHABLE, UNREACHABLE]) {
        const redisUrl = `redis://${redisAt}`;
        // outbox never connects to Redis: --database-url with one address, DATABASE_URL with the other.
        if (redisAt === REACHABLE) cases.push([['outbox', '--database-url', url, '--url', redisUrl], {}, 4, shown]);
        else cases.push([['outbox', '--url', redisUrl], { DATABASE_URL: url }, 4, shown]);
        cases.push([
          ['reconcile', ...target, '--database-url', url, '--url', redisUrl],
          {},
          4,
          redisAt === REACHABLE ? shown : 'Could not reach Redis',
        ]);
      }
    }
    cases.push([['outbox', '--database-url', `mysql://app:${PASSWORD}@db/shop`], {}, 2, 'got "mysql://app:***@db/shop"']);
    cases.push([
      ['outbox'],
      { DATABASE_URL: `postgres://app:${PASSWORD}@db:port/shop` },
      2,
      'DATABASE_URL is not a valid URL: "postgres://app:***@db:port/shop"',
    ]);
    const runs = await runBounded(
      cases.map(
        ([args, env]) =>
          () =>
            runCli(args, env),
      ),
    );
    runs.forEach((run, i) => {
      const [args, , code, message] = cases[i];
      expect({ args, code: run.code, leaked: leaked(run) }).toEqual({ args, code, leaked: false });
      expect(run.stderr).toContain(message);
    });
  }, 300_000);
});
