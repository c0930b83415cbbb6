import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { failureCause } from 'nest-redis-streams';
import { canaryClaimKey, DEFAULT_AUDIT_STREAM } from '../../libs/nest-redis-streams/src/keys/index.js';
import { redisClient, startMicroservice, unique } from '../support/helpers.js';
import { runCli } from './run-cli.js';

const redis = redisClient();
afterAll(() => redis.quit());
// Every test spawns the binary several times; on 2 busy cores one start can take seconds.
jest.setTimeout(120_000);

async function park(stream: string, errorClass: string, error: string, data: object) {
  const meta = ['dlq:reason', 'max-deliveries', 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', 'g', 'dlq:consumer', 'c1'];
  meta.push('dlq:error', error, 'dlq:error_class', errorClass, 'dlq:deliveries', '5', 'dlq:time', String(Date.now()));
  return (await redis.xadd(`${stream}:dlq`, '*', ...meta, 'v', 'nrs/1', 'data', JSON.stringify(data))) as string;
}

/** A stream with a group and 4 declined payments (customers a, b, a, b) and 1 missing-sku failure. */
async function failingStream(): Promise<{ stream: string; declined: string[] }> {
  const stream = unique('cli-groups');
  await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
  const declined: string[] = [];
  for (let n = 1; n <= 4; n++)
    declined.push(await park(stream, 'PaymentError', `Card ${n}00 declined`, { customer: n % 2 ? 'a' : 'b' }));
  await park(stream, 'TypeError', "Cannot read properties of undefined (reading 'sku')", {});
  return { stream, declined };
}

describe('nest-redis-streams dlq groups / redrive --cause (the compiled binary, spawned, against Redis)', () => {
  it('lists failure groups of a stream as a table and as JSON', async () => {
    const { stream } = await failingStream();
    const table = await runCli(['dlq', 'groups', stream]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/fingerprint\s+count\s+class\s+pattern\s+first seen\s+last seen\s+groups/);
    expect(table.stdout).toMatch(/[0-9a-f]{12}\s+4\s+PaymentError\s+Card <n> declined/);
    expect(table.stdout).toContain('2 failure groups; all 5 records read.');

    const json = JSON.parse((await runCli(['dlq', 'groups', stream, '--json'])).stdout);
    expect(json).toMatchObject({ total: 5, scanned: 5, complete: true });
    expect(json.groups.map((g: { count: number }) => g.count)).toEqual([4, 1]);
  });

  it('without a stream, merges the groups of every stream with consumer groups', async () => {
    const [one, two] = [await failingStream(), await failingStream()];
    const run = await runCli(['dlq', 'groups', '--json']);
    expect(run.code).toBe(0);
    const { groups } = JSON.parse(run.stdout) as { groups: Array<{ errorClass: string; streams: Record<string, number> }> };
    const payment = groups.find((g) => g.errorClass === 'PaymentError')!;
    expect(payment.streams).toMatchObject({ [one.stream]: 4, [two.stream]: 4 });
  });

  it('dry-runs a re-drive by cause (how many, keys, oldest/newest), then re-drives that group only', async () => {
    const { stream, declined } = await failingStream();
    const { groups } = JSON.parse((await runCli(['dlq', 'groups', stream, '--json'])).stdout);
    const cause = groups[0].fingerprint as string;

    const dry = await runCli(['dlq', 'redrive', stream, '--cause', cause, '--dry-run', '--key', 'customer']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(`dry run: would re-drive 4 dead letters to ${stream}; nothing was changed`);
    expect(dry.stdout).toContain(`oldest: ${declined[0]}`);
    expect(dry.stdout).toContain(`newest: ${declined[3]}`);
    expect(dry.stdout).toContain('keys (customer): 2 distinct, 0 without it; most: a 2, b 2');
    expect(await redis.xlen(`${stream}:dlq`)).toBe(5);
    expect(await redis.xlen(stream)).toBe(0);

    const listed = JSON.parse((await runCli(['dlq', 'list', stream, '--cause', cause, '--json'])).stdout);
    expect(listed.items.map((d: { id: string }) => d.id)).toEqual(declined);

    const redrive = await runCli(['dlq', 'redrive', stream, '--cause', cause, '--actor', 'alice']);
    expect(redrive.code).toBe(0);
    expect(redrive.stdout).toContain('4 re-driven, 0 tombstones left, 0 failed');
    expect(await redis.xlen(stream)).toBe(4);
    expect(await redis.xlen(`${stream}:dlq`)).toBe(1);
  });

  it('refuses bad fingerprints, unknown groups and misplaced flags with a clear message and exit code', async () => {
    const { stream } = await failingStream();
    const cases: Array<[string[], number, RegExp]> = [
      [['dlq', 'redrive', stream, '--cause', 'PaymentError', '--dry-run'], 2, /12 hex digits like .* got "PaymentError"/],
      [['dlq', 'list', stream, '--cause', 'zz'], 2, /12 hex digits/],
      [
        ['dlq', 'redrive', stream, '--cause', '0123456789ab', '--dry-run'],
        3,
        /has no records of failure group 0123456789ab \(all 5 read\)/,
      ],
      [['dlq', 'redrive', stream, '--cause', '0123456789ab'], 3, /has no records of failure group 0123456789ab/],
      [['dlq', 'redrive', stream, '--dry-run'], 2, /--dry-run and --key go with a filtered re-drive/],
      [['dlq', 'redrive', stream, '--all', '--key', 'customer'], 2, /--key goes with --dry-run/],
      [['dlq', 'groups', stream, 'extra'], 2, /"dlq groups" takes at most one <stream>; got "extra"/],
    ];
    for (const [args, code, message] of cases) {
      const run = await runCli(args);
      expect({ args, code: run.code }).toEqual({ args, code });
      expect(run.stderr).toMatch(message);
    }
    expect(await redis.xlen(`${stream}:dlq`)).toBe(5);
  });

  it('runs a canary re-drive in the foreground, printing progress, and ends done (exit 0)', async () => {
    const { stream } = await failingStream();
    const ran: unknown[] = [];
    @Controller()
    class Handler {
      @EventPattern(stream)
      handle(@Payload() data: unknown) {
        ran.push(data);
      }
    }
    const { app } = await startMicroservice([Handler], { group: 'g', consumer: 'c1' });
    try {
      const cause = failureCause('PaymentError', 'Card 1 declined').fingerprint;
      const run = await runCli([
        'dlq',
        'redrive',
        stream,
        '--cause',
        cause,
        '--canary',
        '2',
        '--rate',
        '50',
        '--settle-ms',
        '20000',
      ]);
      expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
      expect(run.stdout).toMatch(/canary run [0-9a-f-]{36} on /);
      expect(run.stdout).toMatch(/running canary: 1 re-driven/);
      expect(run.stdout).toContain('done rate: 4 re-driven, 4 succeeded, 0 failed again, 0 watching');
      expect(run.stdout).toContain('All 4 re-driven; 4 succeeded, 0 failed again.');
      expect(ran).toHaveLength(4);
      expect(await redis.xlen(`${stream}:dlq`)).toBe(1);
    } finally {
      await app.close();
    }
  });

  it('refuses a second canary of the same cause while one is live, naming the live run (exit 3)', async () => {
    const { stream } = await failingStream();
    const cause = failureCause('PaymentError', 'Card 1 declined').fingerprint;
    // A live run of another instance: its claim, with a lease a minute long on Redis' clock.
    const [seconds] = await redis.time();
    const until = String(Number(seconds) * 1000 + 60_000);
    const claim = canaryClaimKey(DEFAULT_AUDIT_STREAM, stream, cause);
    await redis.hset(claim, 'run', 'the-live-run', 'until', until, 'open', '1', 'upTo', '');
    try {
      const run = await runCli(['dlq', 'redrive', stream, '--cause', cause, '--canary', '2']);
      expect(run.code).toBe(3);
      expect(run.stderr).toContain(`is running already: run the-live-run`);
      expect(await redis.xlen(`${stream}:dlq`)).toBe(5);
    } finally {
      await redis.del(claim);
    }
  });

  it('re-drives what its dry run counted with --up-to, leaving what parked since', async () => {
    const { stream } = await failingStream();
    const cause = failureCause('PaymentError', 'Card 1 declined').fingerprint;
    const dry = await runCli(['dlq', 'redrive', stream, '--cause', cause, '--dry-run']);
    const upTo = /read up to (\d+-\d+): add --up-to \1 to the re-drive/.exec(dry.stdout)?.[1];
    expect(upTo).toBeDefined();
    await park(stream, 'PaymentError', 'Card 900 declined', {}); // parked after the dry run
    const run = await runCli(['dlq', 'redrive', stream, '--cause', cause, '--up-to', upTo!, '--json']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ upTo, more: false });
    expect(JSON.parse(run.stdout).redriven).toHaveLength(4);
    expect(await redis.xlen(`${stream}:dlq`)).toBe(2);
    const bad = await runCli(['dlq', 'redrive', stream, '--cause', cause, '--up-to', 'now']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--up-to');
  });

  it('refuses canary options out of range or without a cause, naming them (exit 2)', async () => {
    const { stream } = await failingStream();
    const cause = failureCause('PaymentError', 'Card 1 declined').fingerprint;
    const cases: Array<[string[], RegExp]> = [
      [['--cause', cause, '--canary', '2', '--max-failure-ratio', '2'], /maxFailureRatio must be a number from 0 to 1, got 2\./],
      [['--cause', cause, '--canary', '0'], /canary must be a whole number from 1 to 1000, got 0\./],
      [['--cause', cause, '--canary', '2', '--rate', 'fast'], /ratePerSec must be a number from 0.01 to 1000, got "fast"\./],
      [['--all', '--canary', '2'], /--canary re-drives one failure group/],
      [['--cause', cause, '--rate', '5'], /--rate goes with --canary N/],
    ];
    for (const [flags, message] of cases) {
      const run = await runCli(['dlq', 'redrive', stream, ...flags]);
      expect({ flags, code: run.code }).toEqual({ flags, code: 2 });
      expect(run.stderr).toMatch(message);
    }
    expect(await redis.xlen(`${stream}:dlq`)).toBe(5);
  });
});
