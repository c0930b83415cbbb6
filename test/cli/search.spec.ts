import { deadLetterFields, redisClient, unique } from '../support/helpers.js';
import { runCli } from './run-cli.js';
import { scheduleKeysOf } from '../../libs/nest-redis-streams/src/keys/index.js';
import { scheduleEntry } from '../../libs/nest-redis-streams/src/schedule/index.js';

const redis = redisClient();
afterAll(() => redis.quit());
// Every test spawns the binary a few times; on 2 busy cores one start can take seconds.
jest.setTimeout(120_000);

const BASE = 1_800_000_000_000;

/** `n` envelope entries at ids BASE+i-0 (orderId A<i>, total i*10, tenant t<i % 3>) and a group g with 4 pending. */
async function orders(n: number): Promise<string> {
  const stream = unique('cli-search');
  const pipeline = redis.pipeline();
  for (let i = 0; i < n; i++) {
    pipeline.xadd(
      stream,
      `${BASE + i}-0`,
      'v',
      'nrs/1',
      'event_id',
      `e-${i}`,
      'data',
      JSON.stringify({ orderId: `A${i}`, total: i * 10 }),
      'headers',
      JSON.stringify({ tenant: `t${i % 3}` }),
    );
  }
  await pipeline.exec();
  await redis.xgroup('CREATE', stream, 'g', '0');
  await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 4, 'STREAMS', stream, '>');
  return stream;
}

describe('nest-redis-streams search (the compiled binary, spawned, against Redis)', () => {
  it('prints the matches as a table and, as JSON, the figures and a cursor that resumes without gaps', async () => {
    const stream = await orders(40);
    const table = await runCli(['search', stream, '--where', 'payload.total >= 300 && headers.tenant == "t0"', '--newest']);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(/^id\s+time\s+fields/);
    expect(table.stdout.match(/^1800000000\d{3}-0/gm)).toEqual([
      '1800000000039-0',
      '1800000000036-0',
      '1800000000033-0',
      '1800000000030-0',
    ]);
    expect(table.stdout).toContain('"orderId":"A36"');
    expect(table.stdout).toMatch(/4 matched, 40 entries looked at in \d+ ms; the whole window was read\./);

    const ids: string[] = [];
    let args = [
      'search',
      stream,
      '--where',
      'headers.tenant == "t1"',
      '--since',
      String(BASE + 5),
      '--budget-entries',
      '9',
      '--json',
    ];
    for (let round = 0; round < 10; round++) {
      const run = await runCli(args);
      expect(run.code).toBe(0);
      const answer = JSON.parse(run.stdout);
      ids.push(...answer.items.map((h: { id: string }) => h.id));
      if (answer.exhausted) break;
      expect(answer).toMatchObject({ scanned: 9, stoppedBy: 'entries' });
      args = [
        'search',
        stream,
        '--where',
        'headers.tenant == "t1"',
        '--budget-entries',
        '9',
        '--cursor',
        answer.cursor,
        '--json',
      ];
    }
    expect(ids).toEqual([7, 10, 13, 16, 19, 22, 25, 28, 31, 34, 37].map((i) => `${BASE + i}-0`));
  });

  it("searches a group's PEL and the dead letters, with their own columns", async () => {
    const stream = await orders(10);
    const pel = await runCli(['search', stream, '--group', 'g', '--where', 'pending.consumer == "c1" && payload.total > 10']);
    expect(pel.code).toBe(0);
    expect(pel.stdout).toMatch(/^id\s+time\s+consumer\s+deliveries\s+fields/);
    expect(pel.stdout.match(/^1800000000\d{3}-0/gm)).toEqual(['1800000000002-0', '1800000000003-0']);
    const meta = { stream, id: `${BASE + 3}-0`, group: 'g', reason: 'non-retryable', error: 'card declined' };
    await redis.xadd(`${stream}:dlq`, '*', ...deadLetterFields(meta, ['data', '{"orderId":"A3"}']));
    const dlq = await runCli(['search', stream, '--dead-letters', '--where', 'deadLetter.error contains "declined"', '--json']);
    expect(dlq.code).toBe(0);
    expect(JSON.parse(dlq.stdout).items).toEqual([
      expect.objectContaining({
        key: `${stream}:dlq`,
        fields: [['data', '{"orderId":"A3"}']],
        deadLetter: expect.objectContaining({ reason: 'non-retryable', originalId: `${BASE + 3}-0` }),
      }),
    ]);
  });

  it('refuses a bad condition, window or combination before connecting, with exit code 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['search', 'orders', '--where', 'payload.a == "x" )'], /unexpected '\)' at column 18/],
      [['search', 'orders', '--where', 'payload.__proto__ == 1'], /'__proto__' cannot be searched/],
      [['search', 'orders', '--where', `payload.a == "${'x'.repeat(2_100)}"`], /the limit is 2000/],
      [['search', 'orders', '--since', 'last tuesday'], /since must be a duration before now \(15m, 2h, 7d\)/],
      [['search', 'orders', '--group', 'g', '--dead-letters'], /--group or --dead-letters, not both/],
      [['search', 'orders', '--cursor', 'abc', '--since', '1h'], /--cursor keeps the window and order/],
      [['search', 'orders', '--budget-ms', 'lots'], /--budget-ms must be a whole number >= 1, got "lots"/],
      [['search'], /"search" needs <stream>/],
    ];
    // Nothing listens here: a usage error must come before any connection attempt.
    for (const [args, message] of cases) {
      const run = await runCli([...args, '--url', 'redis://127.0.0.1:1']);
      expect({ args: args.slice(0, 4), code: run.code }).toEqual({ args: args.slice(0, 4), code: 2 });
      expect(run.stderr).toMatch(message);
    }
    const stream = await orders(2);
    const noGroup = await runCli(['search', stream, '--group', 'nope']);
    expect(noGroup.code).toBe(3);
    expect(noGroup.stderr).toContain('has no consumer group "nope"');
    const newestPel = await runCli(['search', stream, '--group', 'g', '--newest']);
    expect(newestPel.code).toBe(2);
    expect(newestPel.stderr).toMatch(/oldest first only/);
  });

  it('prints ids past what a JavaScript Date holds with their milliseconds, in every command that shows a time', async () => {
    const stream = unique('cli-search-far');
    // 99999999999999999 ms is a valid id time (ids go to 2^64 - 1), about 3 million years on.
    const far = '99999999999999999';
    await redis.xadd(stream, `${BASE}-0`, 'data', '{"n":1}');
    await redis.xadd(stream, `${far}-0`, 'data', '{"n":2}');
    await redis.xgroup('CREATE', stream, 'g', '0');
    await redis.xreadgroup('GROUP', 'g', 'c1', 'STREAMS', stream, '>');
    const letter = deadLetterFields({ stream, id: `${far}-0`, group: 'g', reason: 'non-retryable', error: 'boom' }, [
      'data',
      '{}',
    ]);
    letter[letter.indexOf('dlq:time') + 1] = far;
    await redis.xadd(`${stream}:dlq`, `${far}-0`, ...letter);
    await scheduleEntry(redis, stream, 'far', Date.now(), '', ['*'], ['v', 'nrs/1', 'data', '{}']);
    await redis.zadd(scheduleKeysOf(stream).due, '1e17', 'far');
    // A row: the id, then its time (an ISO date, or the milliseconds past what a Date holds).
    const row = (id: string, time: string) => new RegExp(`^${id}\\s+${time.replace(/\./g, '\\.')}\\s`, 'm');
    const near = row(`${BASE}-0`, new Date(BASE).toISOString());
    const beyond = row(`${far}-0`, far);
    const runs: Array<[string[], ...RegExp[]]> = [
      [['search', stream], near, beyond],
      [['search', stream, '--newest'], near, beyond],
      [['search', stream, '--group', 'g'], near, beyond],
      [['search', stream, '--dead-letters'], beyond],
      // A dead letter's time is a number (dlq:time): 99999999999999999 reads as 1e17.
      [['dlq', 'show', stream, `${far}-0`], /^parked at\s+100000000000000000$/m],
      [['dlq', 'groups', stream], /\s100000000000000000\s+100000000000000000\s/],
      [['dlq', 'list', stream], new RegExp(`^${far}-0\\s`, 'm')],
      // A due time written by hand (ZADD), past what a Date holds: listed as malformed, never moved.
      // The score is shown as the server writes it (Redis 7.0: 1e+17; Redis 8.6 and Valkey: its digits).
      [
        ['scheduled', stream],
        /^far\s.*never \(malformed\)\s+malformed: its due time \(score (1e\+17|100000000000000000)\) is not a time/m,
      ],
    ];
    for (const [args, ...shown] of runs) {
      const run = await runCli(args);
      expect({ args, code: run.code, stderr: run.stderr }).toEqual({ args, code: 0, stderr: '' });
      for (const pattern of shown) expect(run.stdout).toMatch(pattern);
    }
  });
});
