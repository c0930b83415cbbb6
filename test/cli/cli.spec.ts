import { detectTrimFeatures } from '../../libs/nest-redis-streams/src/trim/trim-features.js';
import { redisClient, unique } from '../support/helpers.js';
import { runCli } from './run-cli.js';

const COMMANDS = ['status', 'pending', 'dlq', 'scheduled', 'setid', 'consumers', 'ownership', 'trim', 'reconcile'];
const redis = redisClient();
afterAll(() => redis.quit());
// Every test spawns the binary, up to 10 times in a row; on 2 busy cores one start can take seconds.
jest.setTimeout(120_000);

/** A stream with a group `g` that has delivered `pending` entries to consumer `c1` and has `lag` more. */
async function streamWithWork(pending: number, lag: number): Promise<{ stream: string; ids: string[] }> {
  const stream = unique('cli');
  await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
  const ids: string[] = [];
  for (let i = 0; i < pending + lag; i++)
    ids.push((await redis.xadd(stream, '*', 'n', String(i), 'data', `{"i":${i}}`)) as string);
  if (pending > 0) await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', pending, 'STREAMS', stream, '>');
  return { stream, ids };
}

/** Dead letters written as the transport writes them: metadata fields plus the original fields. */
async function deadLetter(stream: string, reason: string, group: string, extra: string[] = ['n', '1']): Promise<string> {
  const meta = ['dlq:reason', reason, 'dlq:stream', stream, 'dlq:id', '1-1', 'dlq:group', group, 'dlq:consumer', 'c1'];
  meta.push('dlq:error', 'boom', 'dlq:error_class', 'Error', 'dlq:deliveries', '5', 'dlq:time', String(Date.now()));
  return (await redis.xadd(`${stream}:dlq`, '*', ...meta, ...extra)) as string;
}

describe('nest-redis-streams CLI (the compiled binary, spawned, against Redis)', () => {
  it('prints help for itself and for every command, exiting 0', async () => {
    const top = await runCli(['--help']);
    expect(top.code).toBe(0);
    for (const name of COMMANDS) expect(top.stdout).toContain(`  ${name} `);
    for (const name of COMMANDS) {
      const help = await runCli([name, '--help']);
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`Usage:[\\s\\S]*nest-redis-streams ${name}`));
      expect(help.stdout).toContain('--url');
    }
  });

  it('refuses bad arguments with a message naming them and exit code 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['frobnicate'], /Unknown command "frobnicate"/],
      [['status', '--max-lag', 'lots'], /--max-lag must be a whole number >= 0, got "lots"/],
      [['status', '--bogus'], /Unknown option '--bogus'.*status --help/],
      [['pending', 'orders'], /"pending" needs <group>/],
      [['dlq', 'explode', 'orders'], /"dlq" needs an action: groups, list, show, redrive, discard; got "explode"/],
      [['dlq', 'show', 'orders', 'not-an-id'], /A dead-letter id must be a stream id like .* got "not-an-id"/],
      [['setid', 'orders', 'g'], /exactly one of --id <id>, --time <time> or --end/],
      [
        ['setid', 'orders', 'g', '--time', 'yesterday-ish', '--dry-run'],
        /A time must be milliseconds since the epoch or an ISO date/,
      ],
      [['trim', 'orders', '--max-len', '10'], /add --safe/],
      [['status', '--url', 'localhost:6379'], /--url must be a redis:\/\/ or rediss:\/\/ URL/],
    ];
    for (const [args, message] of cases) {
      const run = await runCli(args);
      expect({ args, code: run.code }).toEqual({ args, code: 2 });
      expect(run.stderr).toMatch(message);
    }
  });

  it('says where Redis was expected when it cannot connect (exit 4)', async () => {
    const run = await runCli(['status', '--url', 'redis://127.0.0.1:1']);
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('redis://127.0.0.1:1');
  });

  it('status prints the table and, over --max-lag / --max-pending, exits 1 naming the group', async () => {
    const { stream } = await streamWithWork(2, 5);
    const table = await runCli(['status', '--stream', stream]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/stream\s+group\s+pending\s+oldest idle\s+lag\s+dead letters\s+consumers/);
    expect(table.stdout).toMatch(new RegExp(`${stream}\\s+g\\s+2\\s+.+\\s+5\\s+0\\s+1`));

    const withinLimits = await runCli(['status', '--stream', stream, '--max-lag', '5', '--max-pending', '2']);
    expect(withinLimits.code).toBe(0);
    const overLag = await runCli(['status', '--stream', stream, '--max-lag', '4']);
    expect(overLag.code).toBe(1);
    expect(overLag.stderr).toContain(`Stream "${stream}" group "g": lag (undelivered entries) is 5, above --max-lag 4.`);
    const overPending = await runCli(['status', '--stream', stream, '--max-pending', '1', '--json']);
    expect(overPending.code).toBe(1);
    const json = JSON.parse(overPending.stdout);
    expect(json.streams[0].groups[0]).toMatchObject({ stream, group: 'g', pending: 2, lag: 5, consumers: 1 });
    expect(json.breaches).toEqual([`Stream "${stream}" group "g": pending entries is 2, above --max-pending 1.`]);
  });

  it('status without --stream finds streams by SCAN (dead-letter streams left out)', async () => {
    const { stream } = await streamWithWork(1, 0);
    await deadLetter(stream, 'max-deliveries', 'g');
    const run = await runCli(['status', '--json']);
    expect(run.code).toBe(0);
    const names = (JSON.parse(run.stdout).streams as Array<{ stream: string }>).map((s) => s.stream);
    expect(names).toContain(stream);
    expect(names).not.toContain(`${stream}:dlq`);
  });

  it('pending pages through the PEL with payloads, by consumer', async () => {
    const { stream, ids } = await streamWithWork(3, 0);
    const page = await runCli(['pending', stream, 'g', '--count', '2']);
    expect(page.code).toBe(0);
    expect(page.stdout).toContain(ids[0]);
    expect(page.stdout).toContain('n=0 data={"i":0}');
    expect(page.stdout).toContain(`more: --after ${ids[1]}`);
    const rest = JSON.parse((await runCli(['pending', stream, 'g', '--after', ids[1], '--consumer', 'c1', '--json'])).stdout);
    expect(rest.items.map((e: { id: string }) => e.id)).toEqual([ids[2]]);
    expect(rest.items[0]).toMatchObject({
      consumer: 'c1',
      deliveries: 1,
      fields: [
        ['n', '2'],
        ['data', '{"i":2}'],
      ],
    });
    const missing = await runCli(['pending', stream, 'nope']);
    expect(missing.code).toBe(3);
    expect(missing.stderr).toContain(`Stream "${stream}" has no consumer group "nope".`);
  });

  it('dlq list / show / redrive / discard, tombstones counted as losses and never re-driven', async () => {
    const { stream } = await streamWithWork(0, 0);
    const poison = await deadLetter(stream, 'max-deliveries', 'g', ['order', 'o-1']);
    const other = await deadLetter(stream, 'non-retryable', 'h', ['order', 'o-2']);
    const tomb = await deadLetter(stream, 'trimmed-undelivered', 'g', ['dlq:lost_count', '7']);

    const list = await runCli(['dlq', 'list', stream]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${poison}\\s+max-deliveries\\s+g\\s+5\\s+1-1\\s+Error\\s+boom`));
    expect(list.stdout).toContain('total 3 (max-deliveries 1, non-retryable 1, trimmed-undelivered 1); lost to trimming: 7');
    const filtered = JSON.parse((await runCli(['dlq', 'list', stream, '--group', 'h', '--json'])).stdout);
    expect(filtered.items.map((d: { id: string }) => d.id)).toEqual([other]);

    const show = await runCli(['dlq', 'show', stream, poison]);
    expect(show.stdout).toMatch(/reason\s+max-deliveries/);
    expect(show.stdout).toContain('order = o-1');

    const refused = await runCli(['dlq', 'redrive', stream, tomb]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`Dead letter ${tomb} is a tombstone (trimmed-undelivered)`);

    const one = await runCli(['dlq', 'redrive', stream, poison, '--actor', 'alice']);
    expect(one.code).toBe(0);
    const [[newId, fields]] = await redis.xrange(stream, '-', '+');
    expect(one.stdout).toContain(`re-driven ${poison} -> ${stream} ${newId}`);
    expect(fields).toEqual(['order', 'o-1', 'nrs:group', 'g', 'nrs:redriven_from', poison, 'nrs:original_id', '1-1']);

    const all = await runCli(['dlq', 'redrive', stream, '--all']);
    expect(all.stdout).toContain('1 re-driven, 1 tombstones left, 0 failed');
    expect(await redis.xlen(stream)).toBe(2);

    const discard = await runCli(['dlq', 'discard', stream, tomb]);
    expect(discard.stdout).toContain(`discarded ${tomb}`);
    expect(await redis.xlen(`${stream}:dlq`)).toBe(0);
    const again = await runCli(['dlq', 'discard', stream, tomb]);
    expect(again.code).toBe(3);

    const records = async (key: string) => {
      const audit = await redis.xrevrange(key, '+', '-', 'COUNT', 50);
      return audit.map(([, f]) => f).filter((f) => f[f.indexOf('stream') + 1] === stream);
    };
    const mine = await records('nrs:console:audit');
    const actions = mine.map((f) => `${f[f.indexOf('action') + 1]}:${f[f.indexOf('ok') + 1]}`);
    expect(actions).toEqual(['dlq.discard:1', 'dlq.redrive-matching:1', 'dlq.redrive:1']);
    expect(mine[2][mine[2].indexOf('actor') + 1]).toBe('alice');
    // Refused requests (nothing changed) are kept apart from the writes.
    const refusals = (await records('nrs:console:audit:refused')).map((f) => f[f.indexOf('action') + 1]);
    expect(refusals).toEqual(['dlq.discard', 'dlq.redrive']);
  });

  it('setid --dry-run counts what would be re-delivered or skipped; the move is refused under an active consumer', async () => {
    const { stream, ids } = await streamWithWork(4, 3);
    const back = JSON.parse((await runCli(['setid', stream, 'g', '--id', ids[1], '--dry-run', '--json'])).stdout);
    expect(back).toMatchObject({
      dryRun: true,
      from: ids[3],
      to: ids[1],
      effect: 'redeliver',
      entries: 2,
      pending: 4,
      activeConsumers: ['c1'],
    });
    const forward = await runCli(['setid', stream, 'g', '--end', '--dry-run']);
    expect(forward.stdout).toContain('3 entries would be skipped (never delivered); 4 pending entries stay pending');
    const byTime = JSON.parse(
      (await runCli(['setid', stream, 'g', '--time', ids[0].split('-')[0], '--dry-run', '--json'])).stdout,
    );
    expect(byTime.effect).toBe('redeliver');

    const refused = await runCli(['setid', stream, 'g', '--end']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('has active consumers (c1)');
    expect(await lastDelivered(stream)).toBe(ids[3]);
    const forced = await runCli(['setid', stream, 'g', '--end', '--force']);
    expect(forced.code).toBe(0);
    expect(await lastDelivered(stream)).toBe(ids[6]);
  });

  it('consumers lists holdings; deleting one that holds entries is refused until they are handed over', async () => {
    const { stream, ids } = await streamWithWork(2, 0);
    await redis.xgroup('CREATECONSUMER', stream, 'g', 'c2');
    const list = await runCli(['consumers', stream, 'g']);
    expect(list.stdout).toMatch(new RegExp(`c1\\s+2\\s+.+active\\s+${ids[0]} ${ids[1]}`));
    const refused = await runCli(['consumers', stream, 'g', '--delete', 'c1']);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('holds 2 pending entries');
    const done = await runCli(['consumers', stream, 'g', '--delete', 'c1', '--hand-over-to', 'c2']);
    expect(done.stdout).toContain('handed 2 entries to "c2"; deleted consumer "c1"');
    const rows = (await redis.xpending(stream, 'g', '-', '+', 10)) as Array<[string, string, number, number]>;
    expect(rows.map(([id, consumer, , deliveries]) => [id, consumer, deliveries])).toEqual([
      [ids[0], 'c2', 1],
      [ids[1], 'c2', 1],
    ]);
  });

  it('trim --safe keeps what a group has not acknowledged', async () => {
    const { stream, ids } = await streamWithWork(1, 0);
    for (let i = 0; i < 20; i++) await redis.xadd(stream, '*', 'n', `x${i}`);
    await redis.xgroup('SETID', stream, 'g', '$');
    const run = await runCli(['trim', stream, '--safe', '--max-len', '0', '--json']);
    expect(run.code).toBe(0);
    // Redis' own ACKED trim where it is safe (8.6), else the floor (7.0, Valkey 9.1).
    const { useAcked } = await detectTrimFeatures(redis, stream);
    expect(JSON.parse(run.stdout)).toMatchObject(
      useAcked ? { stream, floor: null, method: 'acked' } : { stream, floor: ids[0], method: 'floor' },
    );
    expect((await redis.xrange(stream, ids[0], ids[0])).length).toBe(1);
  });

  async function lastDelivered(stream: string): Promise<string> {
    const groups = (await redis.xinfo('GROUPS', stream)) as unknown[][];
    const row = groups[0];
    return String(row[row.indexOf('last-delivered-id') + 1]);
  }
});
