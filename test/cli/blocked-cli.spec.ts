import { Cluster } from 'ioredis';
import { partitionStream } from 'nest-redis-streams';
import { seedBlockedKey } from '../support/blocked-keys.js';
import { testContext, unique } from '../support/helpers.js';
import { runCli } from './run-cli.js';
import { masterPortOf } from '../support/cluster-masters.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

// Each test spawns the binary up to 4 times; on 2 busy cores one start can take seconds.
jest.setTimeout(120_000);

describe('nest-redis-streams blocked (spawned, layout seeded in real Redis)', () => {
  const { redis } = testContext();

  it('prints the blocked keys of every group, oldest block first, as a table and as JSON; --group narrows it', async () => {
    const stream = unique('cli-blocked');
    for (const group of ['billing', 'shipping']) await redis.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
    const since = Date.now() - 40 * 60_000;
    await seedBlockedKey(redis, {
      stream,
      group: 'billing',
      key: 'customer-7',
      state: 'parked',
      entry: '1700000000000-0',
      deadLetter: '1700000000500-0',
      deadLetterStream: `${stream}:dlq`,
      since,
      held: ['a', 'b'],
    });
    await seedBlockedKey(redis, {
      stream,
      group: 'shipping',
      key: 'parcel-1',
      state: 'failing',
      entry: '1700000000001-0',
      since,
    });

    const table = await runCli(['blocked', stream]);
    expect([table.code, table.stderr]).toEqual([0, '']);
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^group +key +state +blocking entry +dead letter +waiting +since +for$/);
    expect(lines[2]).toMatch(/^billing +customer-7 +parked +1700000000000-0 +1700000000500-0 +2 +\S+Z +40 min \d+ s$/);
    expect(lines[3]).toMatch(/^shipping +parcel-1 +failing +1700000000001-0 +- +0 /);
    expect(lines.at(-1)).toMatch(/^blocked 2 keys; 2 entries held; oldest blocked for 40 min \d+ s$/);

    // A key is payload data: control characters in it must not reach the terminal.
    await seedBlockedKey(redis, {
      stream,
      group: 'shipping',
      key: 'red\u001b[31m',
      state: 'failing',
      entry: '9-0',
      since: Date.now(),
    });
    const escaped = await runCli(['blocked', stream, '--group', 'shipping']);
    expect(escaped.stdout).not.toContain('\u001b');
    expect(escaped.stdout).toContain('red\\x1b[31m');

    const json = await runCli(['blocked', stream, '--group', 'billing', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        stream,
        group: 'billing',
        key: 'customer-7',
        state: 'parked',
        blockingEntry: '1700000000000-0',
        deadLetter: '1700000000500-0',
        deadLetterStream: `${stream}:dlq`,
        since,
        waiting: 2,
      },
    ]);
  });

  it('says so when nothing is blocked, reads each partition with --partitions, and refuses bad input with its exit code', async () => {
    const stream = unique('cli-blocked-parts');
    for (let p = 0; p < 3; p++) await redis.xgroup('CREATE', partitionStream(stream, p), 'g', '0', 'MKSTREAM');
    const quiet = await runCli(['blocked', partitionStream(stream, 0)]);
    expect([quiet.code, quiet.stdout.trim()]).toEqual([0, 'no blocked keys']);

    await seedBlockedKey(redis, {
      stream: partitionStream(stream, 2),
      group: 'g',
      key: 'k',
      state: 'parked',
      entry: '5-0',
      since: Date.now(),
      held: ['x'],
    });
    const table = await runCli(['blocked', stream, '--partitions', '3']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[2]).toContain(`${partitionStream(stream, 2)} `);

    const help = await runCli(['blocked', '--help']);
    expect([help.code, help.stdout]).toEqual([0, expect.stringMatching(/^Usage: nest-redis-streams blocked <stream>/)]);
    expect((await runCli(['--help'])).stdout).toMatch(/^ {2}blocked +ordering keys held back/m);
    const none = await runCli(['blocked']);
    expect([none.code, none.stderr]).toEqual([2, expect.stringContaining('"blocked" needs <stream>')]);
    const bad = await runCli(['blocked', stream, '--partitions', '0']);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringContaining('--partitions must be a whole number >= 1, got "0"')]);
    const nowhere = unique('nowhere');
    const missing = await runCli(['blocked', nowhere]);
    expect([missing.code, missing.stderr.trim()]).toEqual([3, `Key "${nowhere}" does not exist.`]);
    const typo = await runCli(['blocked', partitionStream(stream, 0), '--group', 'gg']);
    expect([typo.code, typo.stderr.trim()]).toEqual([3, `Stream "${partitionStream(stream, 0)}" has no consumer group "gg".`]);
  });
});

describe('nest-redis-streams blocked on a Redis Cluster (3 masters)', () => {
  let cluster: { startupNodes: Array<{ host: string; port: number }>; stop(): Promise<void> };
  let redis: Cluster;
  let seeds: string[];

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    redis = new Cluster(cluster.startupNodes);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    seeds = ['--cluster', '--url', cluster.startupNodes.map((n) => `redis://${n.host}:${n.port}`).join(',')];
  }, 120_000);
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  const masterOf = (key: string) => masterPortOf(redis, key);

  it('reads the blocked keys of every partition of a partitioned stream, each on its own master', async () => {
    const stream = unique('cl-blocked');
    const partitions = 8;
    const parts = Array.from({ length: partitions }, (_, p) => partitionStream(stream, p));
    for (const part of parts) await redis.xgroup('CREATE', part, 'g', '0', 'MKSTREAM');
    // One blocked key on a partition of each master, so a read that went to one node would miss some.
    const byMaster = new Map<number, string>();
    for (const part of parts) if (!byMaster.has(await masterOf(part))) byMaster.set(await masterOf(part), part);
    expect(byMaster.size).toBe(3);
    const blockedParts = [...byMaster.values()];
    for (const [i, part] of blockedParts.entries()) {
      await seedBlockedKey(redis, {
        stream: part,
        group: 'g',
        key: `k${i}`,
        state: 'parked',
        entry: `${i + 1}-0`,
        since: 1_000 + i,
        held: Array(i + 1).fill('x'),
      });
    }

    const run = await runCli(['blocked', stream, '--partitions', String(partitions), '--group', 'g', '--json', ...seeds]);
    expect([run.code, run.stderr]).toEqual([0, '']);
    const blocked = JSON.parse(run.stdout) as Array<{ stream: string; key: string; waiting: number }>;
    expect(blocked.map((b) => [b.stream, b.key, b.waiting]).sort()).toEqual(
      blockedParts.map((part, i) => [part, `k${i}`, i + 1]).sort(),
    );
  });
});
