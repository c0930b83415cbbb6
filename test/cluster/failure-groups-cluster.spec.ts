import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { Cluster, type Redis } from 'ioredis';
import { NonRetryableError, StreamOperations, failureCause, partitionStream } from 'nest-redis-streams';
import { runCli } from '../cli/run-cli.js';
import { startMicroservice, unique, waitFor } from '../support/helpers.js';
import { masterPortOf } from '../support/cluster-masters.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

// Consumers, canaries and spawned CLI runs against a cluster: on 2 busy cores a case can take long.
jest.setTimeout(120_000);

const PARTITIONS = 3;
const DECLINED = (n: number) => `Order o-${n} was declined by the provider.`;
const NO_STOCK = (n: number) => `Stock for sku s-${n} is missing.`;
const DECLINED_CAUSE = failureCause('NonRetryableError', DECLINED(1)).fingerprint;
const NO_STOCK_CAUSE = failureCause('NonRetryableError', NO_STOCK(1)).fingerprint;

interface Order {
  n: number;
  customer: string;
  fail?: 'declined' | 'stock';
}

/**
 * Failure groups, dry runs, canary re-drives and entry history of a partitioned stream on a Redis
 * Cluster of 3 masters started by the test: each partition (and its dead-letter stream, which
 * shares its slot) on another master.
 */
describe('dead letters by cause and safe re-drive on a Redis Cluster', () => {
  let cluster: { startupNodes: Array<{ host: string; port: number }>; stop(): Promise<void> };
  let redis: Cluster;
  const closers: Array<() => Promise<unknown>> = [];
  const connection = () => ({ cluster: cluster.startupNodes, clusterOptions: { redisOptions: { maxRetriesPerRequest: null } } });
  const operations = (options: ConstructorParameters<typeof StreamOperations>[1] = {}) =>
    new StreamOperations(redis as unknown as Redis, { auditStream: unique('cl-audit'), ...options });

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    redis = new Cluster(cluster.startupNodes);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  }, 120_000);
  afterEach(async () => {
    while (closers.length) await closers.pop()!();
  });
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  const masterOf = (key: string) => masterPortOf(redis, key);

  /** A stream name whose three partitions sit on three different masters. */
  async function spreadStream(prefix: string): Promise<{ stream: string; partitions: string[] }> {
    for (let attempt = 0; ; attempt++) {
      const stream = unique(`${prefix}-${attempt}`);
      const partitions = Array.from({ length: PARTITIONS }, (_, p) => partitionStream(stream, p));
      if (new Set(await Promise.all(partitions.map(masterOf))).size === PARTITIONS) return { stream, partitions };
    }
  }

  /** Group `g` of the partitioned stream: fails (parks at once) the orders that say so until `health.fixed`. */
  async function consume(stream: string, health: { fixed: boolean }): Promise<number[]> {
    const ran: number[] = [];
    @Controller()
    class Orders {
      @EventPattern(stream, { group: 'g', partitions: PARTITIONS })
      handle(@Payload() order: Order) {
        if (order.fail === 'declined' && !health.fixed) throw new NonRetryableError(DECLINED(order.n));
        if (order.fail === 'stock' && !health.fixed) throw new NonRetryableError(NO_STOCK(order.n));
        ran.push(order.n);
      }
    }
    const { app } = await startMicroservice([Orders], { connection: connection(), consumer: 'c1' });
    closers.push(() => app.close());
    return ran;
  }

  /**
   * Adds `orders(p)` to partition p (transport envelope) and waits until the healthy ones ran and
   * the failing ones sit in each partition's dead-letter stream (`<partition>:dlq`, same slot).
   */
  async function parkIn(partitions: string[], ran: number[], orders: (p: number) => Order[]): Promise<void> {
    let healthy = 0;
    for (const [p, key] of partitions.entries()) {
      for (const order of orders(p)) {
        await redis.xadd(key, '*', 'v', 'nrs/1', 'data', JSON.stringify(order));
        if (!order.fail) healthy += 1;
      }
    }
    await waitFor(() => ran.length === healthy, `${healthy} healthy orders to run`);
    for (const [p, key] of partitions.entries()) {
      const failing = orders(p).filter((o) => o.fail).length;
      await waitFor(async () => (await redis.xlen(`${key}:dlq`)) === failing, `${failing} dead letters in ${key}:dlq`);
    }
  }

  /** Per partition: orders 10p+1…10p+5; two declined (customers a and b), one out of stock, two healthy. */
  const mixed = (p: number): Order[] => [
    { n: 10 * p + 1, customer: 'a', fail: 'declined' },
    { n: 10 * p + 2, customer: 'b' },
    { n: 10 * p + 3, customer: 'b', fail: 'declined' },
    { n: 10 * p + 4, customer: 'a', fail: 'stock' },
    { n: 10 * p + 5, customer: 'c' },
  ];

  const fieldOf = (fields: string[], name: string) => fields[fields.indexOf(name) + 1];
  const lengths = (keys: string[]) => Promise.all(keys.map((k) => redis.xlen(k)));

  it('groups the dead letters of every partition by cause, and dry-runs a re-drive without writing', async () => {
    const { stream, partitions } = await spreadStream('cl-groups');
    const ran = await consume(stream, { fixed: false });
    await parkIn(partitions, ran, mixed);
    const ops = operations();

    for (const partition of partitions) {
      const found = await ops.failureGroups(partition);
      expect(found).toMatchObject({
        total: 3,
        scanned: 3,
        complete: true,
        readUpTo: { [`${partition}:dlq`]: expect.any(String) },
      });
      expect(found.groups.map((g) => [g.fingerprint, g.count, g.streams])).toEqual([
        [DECLINED_CAUSE, 2, { [partition]: 2 }],
        [NO_STOCK_CAUSE, 1, { [partition]: 1 }],
      ]);
      expect(found.groups[0]).toMatchObject({
        errorClass: 'NonRetryableError',
        groups: { g: 2 },
        reasons: { 'non-retryable': 2 },
      });
    }

    // Without a list: the partitions found by SCAN on every master, merged by cause.
    const across = await ops.failureGroupsAcross();
    expect(across.skipped).toEqual([]);
    const declined = across.groups.find((g) => g.fingerprint === DECLINED_CAUSE)!;
    const noStock = across.groups.find((g) => g.fingerprint === NO_STOCK_CAUSE)!;
    expect(declined.streams).toMatchObject(Object.fromEntries(partitions.map((p) => [p, 2])));
    expect(noStock.streams).toMatchObject(Object.fromEntries(partitions.map((p) => [p, 1])));
    for (const partition of partitions) expect(across.readUpTo).toHaveProperty([`${partition}:dlq`]);

    const keys = [...partitions, ...partitions.map((p) => `${p}:dlq`)];
    const before = await lengths(keys);
    for (const partition of partitions) {
      const letters = await redis.xrange(`${partition}:dlq`, '-', '+');
      const declinedIds = letters.filter(([, f]) => f.join(' ').includes('declined')).map(([id]) => id);
      const preview = await ops.previewRedrive(partition, { cause: DECLINED_CAUSE }, 'customer');
      expect(preview).toMatchObject({ wouldRedrive: 2, tombstones: 0, groups: { g: 2 }, scanned: 3, total: 3, complete: true });
      expect(preview.keys).toEqual({
        field: 'customer',
        distinct: 2,
        top: expect.arrayContaining([
          { key: 'a', count: 1 },
          { key: 'b', count: 1 },
        ]),
        missing: 0,
      });
      expect([preview.oldest?.id, preview.newest?.id]).toEqual(declinedIds);
      expect(preview.oldest?.originalId).toMatch(/^\d+-\d+$/);
    }
    expect(await lengths(keys)).toEqual(before);
    expect(await redis.exists(ops.audit.stream)).toBe(0);
  });

  it('a canary re-drive goes on to done on every master once the handler is fixed; lineage and history follow the entry', async () => {
    const { stream, partitions } = await spreadStream('cl-canary');
    const health = { fixed: false };
    const ran = await consume(stream, health);
    const declinedOnly = (p: number): Order[] =>
      [1, 2, 3, 4].map((k) => ({ n: 10 * p + k, customer: k % 2 ? 'a' : 'b', fail: 'declined' as const }));
    await parkIn(partitions, ran, declinedOnly);
    // Per partition and dead letter, the id its entry had when it was parked (dlq:id). Keyed by
    // both: streams on different masters can hand out the same id in the same millisecond.
    const firstIdOf = new Map<string, string>();
    for (const partition of partitions)
      for (const [id, fields] of await redis.xrange(`${partition}:dlq`, '-', '+'))
        firstIdOf.set(`${partition} ${id}`, fieldOf(fields, 'dlq:id'));
    health.fixed = true;
    const ops = operations();

    for (const partition of partitions) {
      const { done } = await ops.canaries.start('tester', partition, { cause: DECLINED_CAUSE, canary: 2, ratePerSec: 50 });
      const end = await done;
      expect(end).toMatchObject({ state: 'done', phase: 'rate', redriven: 4, succeeded: 4, failedAgain: 0, watching: 0 });
      expect(end.reason).toBe('All 4 re-driven; 4 succeeded, 0 failed again.');
      expect(await redis.xlen(`${partition}:dlq`)).toBe(0);
    }
    expect(ran).toHaveLength(12);

    // Each re-driven entry names the dead letter it came from and its first id; its history runs to the ack.
    const redrivenFrom = new Set<string>();
    for (const partition of partitions) {
      const redriven = (await redis.xrange(partition, '-', '+')).filter(([, f]) => f.includes('nrs:redriven_from'));
      expect(redriven).toHaveLength(4);
      for (const [newId, fields] of redriven) {
        const letterId = fieldOf(fields, 'nrs:redriven_from');
        const firstId = fieldOf(fields, 'nrs:original_id');
        redrivenFrom.add(`${partition} ${letterId}`);
        expect([firstId, fieldOf(fields, 'nrs:group')]).toEqual([firstIdOf.get(`${partition} ${letterId}`), 'g']);
        const history = await ops.entryHistory(partition, newId);
        expect(history).toMatchObject({ inStream: true, complete: true });
        expect(history.steps.map((s) => [s.what, s.id])).toEqual([
          ['added', firstId],
          ['parked', letterId],
          ['re-driven', newId],
          ['acknowledged', newId],
        ]);
      }
    }
    expect([...redrivenFrom].sort()).toEqual([...firstIdOf.keys()].sort());
  });

  it('a canary re-drive on the cluster stops by itself, saying why, when the re-driven entries fail again', async () => {
    const { stream, partitions } = await spreadStream('cl-stop');
    const ran = await consume(stream, { fixed: false });
    const declinedOnly = (p: number): Order[] =>
      [1, 2, 3, 4, 5, 6].map((k) => ({ n: 10 * p + k, customer: 'a', fail: 'declined' as const }));
    await parkIn(partitions, ran, declinedOnly);
    const partition = partitions[2];
    const ops = operations();

    const end = await (
      await ops.canaries.start('tester', partition, { cause: DECLINED_CAUSE, canary: 3, maxFailureRatio: 0.5 })
    ).done;
    expect(end).toMatchObject({ state: 'stopped', phase: 'canary' });
    expect(end.failedAgain).toBeGreaterThanOrEqual(2);
    expect(end.redriven).toBeLessThanOrEqual(3);
    expect(end.reason).toMatch(/^Stopped: \d of the 3 canaries failed again .* > maxFailureRatio 0\.5\. The rest stay/);
    expect(await ops.canaries.progress(end.runId)).toMatchObject({ state: 'stopped', reason: end.reason });
    // Every re-driven entry fails again (one may still be in flight when the run stops): the
    // dead-letter stream ends with the ones never re-driven and the re-driven ones parked again.
    const parkedAgain = async () =>
      (await redis.xrange(`${partition}:dlq`, '-', '+')).filter(([, f]) => f.includes('nrs:redriven_from'));
    await waitFor(async () => (await parkedAgain()).length === end.redriven, `${end.redriven} entries parked again`);
    expect(await redis.xlen(`${partition}:dlq`)).toBe(6);
    expect(await lengths(partitions.slice(0, 2).map((p) => `${p}:dlq`))).toEqual([6, 6]);

    // The second dead letter keeps the lineage; the entry's history shows both parks.
    const [[secondLetterId, fields]] = await parkedAgain();
    const newId = fieldOf(fields, 'dlq:id');
    const history = await ops.entryHistory(partition, newId);
    expect(history.steps.map((s) => [s.what, s.id])).toEqual([
      ['added', fieldOf(fields, 'nrs:original_id')],
      ['parked', fieldOf(fields, 'nrs:redriven_from')],
      ['re-driven', newId],
      ['parked', secondLetterId],
    ]);
    expect(history.steps[3].detail).toContain('(non-retryable) by group g after 1 deliveries: NonRetryableError: Order o-');
  });

  it('the CLI on the cluster lists failure groups across partitions and dry-runs a re-drive by cause', async () => {
    const { stream, partitions } = await spreadStream('cl-cli');
    const ran = await consume(stream, { fixed: false });
    await parkIn(partitions, ran, mixed);
    const seeds = ['--cluster', '--url', cluster.startupNodes.map((n) => `redis://${n.host}:${n.port}`).join(',')];

    const across = await runCli(['dlq', 'groups', ...seeds, '--json']);
    expect({ code: across.code, stderr: across.stderr }).toEqual({ code: 0, stderr: '' });
    const merged = JSON.parse(across.stdout) as { groups: Array<{ fingerprint: string; streams: Record<string, number> }> };
    const declined = merged.groups.find((g) => g.fingerprint === DECLINED_CAUSE)!;
    expect(declined.streams).toMatchObject(Object.fromEntries(partitions.map((p) => [p, 2])));

    // As a table: nothing skipped (stderr would name the handlers' error streams, which have no groups).
    const acrossTable = await runCli(['dlq', 'groups', ...seeds]);
    expect({ code: acrossTable.code, stderr: acrossTable.stderr }).toEqual({ code: 0, stderr: '' });
    expect(acrossTable.stdout).toMatch(new RegExp(`${DECLINED_CAUSE}\\s+\\d+\\s+NonRetryableError`));

    const table = await runCli(['dlq', 'groups', partitions[1], ...seeds]);
    expect(table.code).toBe(0);
    const pattern = failureCause('NonRetryableError', DECLINED(1)).pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    expect(table.stdout).toMatch(new RegExp(`${DECLINED_CAUSE}\\s+2\\s+NonRetryableError\\s+${pattern}`));
    expect(table.stdout).toContain('2 failure groups; all 3 records read.');

    const keys = [...partitions, ...partitions.map((p) => `${p}:dlq`)];
    const before = await lengths(keys);
    const letters = await redis.xrange(`${partitions[1]}:dlq`, '-', '+');
    const [oldest, newest] = letters.filter(([, f]) => f.join(' ').includes('declined')).map(([id]) => id);
    const dry = await runCli([
      'dlq',
      'redrive',
      partitions[1],
      '--cause',
      DECLINED_CAUSE,
      '--dry-run',
      '--key',
      'customer',
      ...seeds,
    ]);
    expect({ code: dry.code, stderr: dry.stderr }).toEqual({ code: 0, stderr: '' });
    expect(dry.stdout).toContain(`dry run: would re-drive 2 dead letters to ${partitions[1]}; nothing was changed`);
    expect(dry.stdout).toContain(`oldest: ${oldest}`);
    expect(dry.stdout).toContain(`newest: ${newest}`);
    expect(dry.stdout).toMatch(/keys \(customer\): 2 distinct, 0 without it; most: [ab] 1, [ab] 1/);
    expect(await lengths(keys)).toEqual(before);
  });
});
