import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { Cluster, Redis } from 'ioredis';
import { type RedisStreamsServer, partitionStream } from 'nest-redis-streams';
import { deadLetterFields, startMicroservice, unique, waitFor } from '../support/helpers.js';
import { runCli } from './run-cli.js';
import { masterPortOf } from '../support/cluster-masters.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs');

// Every test spawns the binary up to 3 times against a cluster; on 2 busy cores one start can take seconds.
jest.setTimeout(120_000);

/** The CLI (spawned) against a Redis Cluster of 3 masters started by the test (`--cluster`). */
describe('nest-redis-streams CLI on a Redis Cluster', () => {
  let cluster: { startupNodes: Array<{ host: string; port: number }>; stop(): Promise<void> };
  let redis: Cluster;
  let seeds: string[];
  const closers: Array<() => Promise<unknown>> = [];

  beforeAll(async () => {
    cluster = await startCluster({ masters: 3, replicas: 0 });
    redis = new Cluster(cluster.startupNodes);
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
    // Two of the seeds: the CLI finds the third master from them.
    seeds = [
      '--cluster',
      '--url',
      cluster.startupNodes
        .slice(0, 2)
        .map((n) => `redis://${n.host}:${n.port}`)
        .join(','),
    ];
  }, 120_000);
  afterAll(async () => {
    while (closers.length) await closers.pop()!();
    redis?.disconnect();
    await cluster?.stop();
  });

  const masterOf = (key: string) => masterPortOf(redis, key);

  /** Three streams, one on each master: group g with `i + 1` pending and 2 undelivered, one dead letter. */
  async function streamsOnEveryMaster(): Promise<string[]> {
    const byMaster = new Map<number, string>();
    for (let n = 0; byMaster.size < 3; n++) {
      const candidate = unique(`cli-cl-${n}`);
      const master = await masterOf(candidate);
      if (!byMaster.has(master)) byMaster.set(master, candidate);
    }
    const streams = [...byMaster.values()];
    for (const [i, stream] of streams.entries()) {
      await redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
      for (let e = 0; e < i + 3; e++) await redis.xadd(stream, '*', 'n', String(e));
      await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', i + 1, 'STREAMS', stream, '>');
      // On a cluster the dead-letter stream shares the stream's slot: {<stream>}:dlq.
      await redis.xadd(
        `{${stream}}:dlq`,
        '*',
        'dlq:reason',
        'max-deliveries',
        'dlq:stream',
        stream,
        'dlq:id',
        '1-1',
        'dlq:group',
        'g',
        'dlq:consumer',
        'c1',
        'dlq:error',
        'boom',
        'dlq:error_class',
        'Error',
        'dlq:deliveries',
        '5',
        'dlq:time',
        String(Date.now()),
        'n',
        'dead',
      );
    }
    return streams;
  }

  it('status finds the streams of every master, prints their figures and gates on --max-pending', async () => {
    const streams = await streamsOnEveryMaster();
    const json = await runCli(['status', ...seeds, '--json']);
    expect(json).toMatchObject({ code: 0, stderr: '' });
    const found = (JSON.parse(json.stdout).streams as Array<{ stream: string; groups: unknown[] }>).filter((s) =>
      streams.includes(s.stream),
    );
    expect(found.map((s) => s.stream).sort()).toEqual([...streams].sort());
    for (const [i, stream] of streams.entries()) {
      const [group] = found.find((s) => s.stream === stream)!.groups;
      expect(group).toMatchObject({ group: 'g', pending: i + 1, lag: 2, groupDeadLetters: 1, consumers: 1, owner: null });
    }
    const table = await runCli(['status', ...seeds, '--stream', streams[2]]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(new RegExp(`${streams[2]}\\s+g\\s+3\\s+.+\\s+2\\s+1\\s+1`));
    const over = await runCli(['status', ...seeds, ...streams.flatMap((s) => ['--stream', s]), '--max-pending', '2']);
    expect(over.code).toBe(1);
    expect(over.stderr).toContain(`Stream "${streams[2]}" group "g": pending entries is 3, above --max-pending 2.`);
    expect(over.stderr).not.toContain(streams[0]);
  });

  it("dlq list reads the dead-letter stream in the stream's slot ({<stream>}:dlq)", async () => {
    const [stream] = await streamsOnEveryMaster();
    const [[id]] = await redis.xrange(`{${stream}}:dlq`, '-', '+');
    const list = await runCli(['dlq', 'list', stream, ...seeds]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${id}\\s+max-deliveries\\s+g\\s+5\\s+1-1\\s+Error\\s+boom`));
    const json = JSON.parse((await runCli(['dlq', 'list', stream, ...seeds, '--json'])).stdout);
    expect(json.items.map((d: { id: string }) => d.id)).toEqual([id]);
  });

  it('ownership reads members and owners across slots (members beside the stream, owners beside each partition)', async () => {
    const stream = unique('cli-cl-own');
    @Controller()
    class Exclusive {
      @EventPattern(stream, { group: 'g', partitions: 3, ownership: 'exclusive', ownershipLeaseMs: 600 })
      handle() {}
    }
    const connection = { cluster: cluster.startupNodes, clusterOptions: { redisOptions: { maxRetriesPerRequest: null } } };
    const { app, server } = await startMicroservice([Exclusive], { connection, consumer: 'solo' });
    closers.push(() => app.close());
    const owned = (s: RedisStreamsServer) => s.getOwnership()[0]?.owned ?? [];
    await waitFor(() => owned(server).length === 3, 'solo owns the three partitions');
    const run = await runCli(['ownership', stream, 'g', ...seeds, '--json', '--max-unowned', '0']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    const ownership = JSON.parse(run.stdout);
    const member = server.getOwnership()[0].member;
    expect(ownership.members).toEqual([{ member, leaseLeftMs: expect.any(Number), owns: [0, 1, 2] }]);
    expect(ownership.partitions.map((p: { stream: string; owner: string }) => [p.stream, p.owner])).toEqual(
      [0, 1, 2].map((p) => [partitionStream(stream, p), member]),
    );
  });

  it('search merges the partitions of a stream across masters, and reads dead letters in their slot', async () => {
    const stream = unique('cli-cl-search');
    const partitions = [0, 1, 2, 3, 4, 5].map((p) => partitionStream(stream, p));
    const masters = new Set(await Promise.all(partitions.map(masterOf)));
    expect(masters.size).toBeGreaterThan(1);
    const base = 1_800_000_000_000;
    // Entry i goes to partition i % 6: the merged answer must come back in id order across nodes.
    for (let i = 0; i < 30; i++)
      await redis.xadd(partitions[i % 6], `${base + i}-0`, 'data', JSON.stringify({ n: i }), 'headers', '{"tenant":"t"}');
    const found = await runCli([
      'search',
      stream,
      '--partitions',
      '6',
      '--where',
      'payload.n >= 20 && headers.tenant == "t"',
      '--newest',
      ...seeds,
      '--json',
    ]);
    expect(found).toMatchObject({ code: 0, stderr: '' });
    const answer = JSON.parse(found.stdout);
    expect(answer.items.map((h: { id: string; stream: string }) => [h.id, h.stream])).toEqual(
      Array.from({ length: 10 }, (_, k) => 29 - k).map((i) => [`${base + i}-0`, partitions[i % 6]]),
    );
    expect(answer).toMatchObject({ scanned: 30, exhausted: true });
    // Each partition's PEL: XPENDING and the pipelined XRANGEs go to the node of that partition's slot.
    for (const key of partitions) {
      await redis.xgroup('CREATE', key, 'g', '0');
      await redis.xreadgroup('GROUP', 'g', 'c1', 'COUNT', 2, 'STREAMS', key, '>');
    }
    const pel = await runCli([
      'search',
      stream,
      '--partitions',
      '6',
      '--group',
      'g',
      '--where',
      'payload.n >= 6',
      ...seeds,
      '--json',
    ]);
    expect(pel.code).toBe(0);
    expect(
      JSON.parse(pel.stdout).items.map((h: { id: string; pending: { consumer: string } }) => [h.id, h.pending.consumer]),
    ).toEqual(Array.from({ length: 6 }, (_, k) => [`${base + 6 + k}-0`, 'c1']));
    const meta = { stream: partitions[2], id: `${base + 2}-0`, group: 'g', reason: 'max-deliveries', error: 'boom' };
    await redis.xadd(`${partitions[2]}:dlq`, '*', ...deadLetterFields(meta, ['data', '{"n":2}']));
    const letters = await runCli([
      'search',
      stream,
      '--partitions',
      '6',
      '--dead-letters',
      '--where',
      'payload.n == 2',
      ...seeds,
      '--json',
    ]);
    expect(letters.code).toBe(0);
    expect(JSON.parse(letters.stdout).items.map((h: { key: string }) => h.key)).toEqual([`${partitions[2]}:dlq`]);
  });

  // Last: it sets a password on every node for its duration (connections already open stay logged in).
  it("logs in to a password-protected cluster with the seeds' user and password, and refuses seeds that log in differently", async () => {
    while (closers.length) await closers.pop()!();
    const [stream] = await streamsOnEveryMaster();
    const [[id]] = await redis.xrange(`{${stream}}:dlq`, '-', '+');
    // Written percent-encoded in the URLs: the CLI must decode them as ioredis does.
    const admin = 'adm:in@pw/1';
    const user = unique('nrs-cli-seed').replace(/[^a-z0-9-]/gi, '-');
    const password = 'us@er:pw/2';
    const nodes = cluster.startupNodes.map(({ host, port }) => new Redis({ host, port }));
    const requirePass = (pass: string) => Promise.all(nodes.map((node) => node.config('SET', 'requirepass', pass)));
    await Promise.all(nodes.map((node) => node.call('ACL', 'SETUSER', user, 'on', `>${password}`, '~*', '&*', '+@all')));
    await requirePass(admin);
    try {
      const seedsAs = (login: string) =>
        cluster.startupNodes
          .slice(0, 2)
          .map((n) => `redis://${login}@${n.host}:${n.port}`)
          .join(',');
      const asDefault = await runCli([
        'status',
        '--stream',
        stream,
        '--cluster',
        '--url',
        seedsAs(`:${encodeURIComponent(admin)}`),
      ]);
      expect({ code: asDefault.code, stderr: asDefault.stderr }).toEqual({ code: 0, stderr: '' });
      expect(asDefault.stdout).toContain(stream);
      const asUser = await runCli([
        'dlq',
        'list',
        stream,
        '--cluster',
        '--url',
        seedsAs(`${user}:${encodeURIComponent(password)}`),
      ]);
      expect({ code: asUser.code, stderr: asUser.stderr }).toEqual({ code: 0, stderr: '' });
      expect(asUser.stdout).toContain(id);
      // One seed with the user, one without: which is right cannot be told.
      const [a, b] = cluster.startupNodes;
      const mixed = await runCli([
        'status',
        '--cluster',
        '--url',
        `redis://${user}:${encodeURIComponent(password)}@${a.host}:${a.port},redis://${b.host}:${b.port}`,
      ]);
      expect(mixed.code).toBe(2);
      expect(mixed.stderr).toContain(`the --cluster seeds log in differently ("redis://${user}:***@${a.host}:${a.port}" and`);
      expect(mixed.stderr).not.toContain(encodeURIComponent(password));
    } finally {
      await requirePass('');
      await Promise.all(nodes.map((node) => node.call('ACL', 'DELUSER', user)));
      nodes.forEach((node) => node.disconnect());
    }
  });
});
