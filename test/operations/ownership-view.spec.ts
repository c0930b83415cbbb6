import { Controller } from '@nestjs/common';
import { EventPattern } from '@nestjs/microservices';
import { type RedisStreamsServer, StreamOperations, partitionStream, partitionStreams } from 'nest-redis-streams';
import { runCli } from '../cli/run-cli.js';
import { q, startConsoleApp } from '../console/console-app.js';
import { startMicroservice, testContext, unique, waitFor } from '../support/helpers.js';

const PARTITIONS = 4;
// Short enough for quick rounds, long enough that a busy machine (a CLI start took seconds at load
// 15 on 2 cores) does not let the owners' leases lapse between their renewals and the CLI's read:
// with 600 ms, the CLI saw both members owning nothing.
const LEASE_MS = 3_000;
// Each test starts two servers or spawns the CLI up to 6 times; on 2 busy cores that passes 5 s.
jest.setTimeout(120_000);

/** A handler of `stream` in group `g` whose partitions are owned exclusively (short lease: quick rounds). */
function exclusiveHandler(stream: string) {
  @Controller()
  class Exclusive {
    @EventPattern(stream, { group: 'g', partitions: PARTITIONS, ownership: 'exclusive', ownershipLeaseMs: LEASE_MS })
    handle() {}
  }
  return Exclusive;
}

const owned = (server: RedisStreamsServer) => server.getOwnership()[0]?.owned ?? [];

describe('ownership in the operations layer, the CLI and the console (two servers, real Redis)', () => {
  const { redis, closers } = testContext();

  /** Two instances `a` and `b` sharing the partitions 2/2; returns their member ids by name. */
  async function twoOwners(stream: string) {
    const started: Array<Awaited<ReturnType<typeof startMicroservice>>> = [];
    for (const consumer of ['a', 'b']) {
      const instance = await startMicroservice([exclusiveHandler(stream)], { consumer });
      closers.push(() => instance.app.close());
      started.push(instance);
    }
    await waitFor(() => started.every(({ server }) => owned(server).length === 2), 'partitions shared 2/2');
    const [a, b] = started.map(({ server }) => server.getOwnership()[0].member);
    return { a, b, servers: started.map(({ server }) => server) };
  }

  it('reads members, owner, generation and lease per partition from Redis, as the instances see them', async () => {
    const stream = unique('own-view');
    const { a, b, servers } = await twoOwners(stream);
    const ops = new StreamOperations(redis);
    const ownership = (await ops.ownership(stream, 'g'))!;
    expect(ownership).toMatchObject({ stream, group: 'g', unowned: [] });
    expect(ownership.members.map((m) => [m.member, m.owns])).toEqual([
      [a, owned(servers[0])],
      [b, owned(servers[1])],
    ]);
    expect(ownership.members.every((m) => m.leaseLeftMs > 0 && m.leaseLeftMs <= LEASE_MS)).toBe(true);
    expect(ownership.partitions.map((p) => p.stream)).toEqual(partitionStreams(stream, PARTITIONS));
    // The generations agree with each owner's own view (a partition that moved from a to b has 2).
    const views = new Map(
      servers.flatMap((s) => s.getOwnership()[0].partitions.filter((p) => p.mine)).map((p) => [p.partition, p]),
    );
    for (const p of ownership.partitions) {
      expect(p.owner).toBe(views.get(p.partition)!.owner);
      expect(p.generation).toBe(views.get(p.partition)!.generation);
      expect(p.leaseLeftMs).toBeGreaterThan(0);
    }
    expect(ownership.claims).toBe(ownership.partitions.reduce((sum, p) => sum + p.generation, 0));
    expect(ownership.claims).toBeGreaterThanOrEqual(PARTITIONS + 2);
    // A partition stream names the same logical stream; a count reads exactly that many.
    expect((await ops.ownership(partitionStream(stream, 3), 'g'))!.stream).toBe(stream);
    expect((await ops.ownership(stream, 'g', 2))!.partitions).toHaveLength(2);
    // The overview carries each partition stream's owner.
    const overview = await new StreamOperations(redis, { streams: partitionStreams(stream, PARTITIONS) }).overview();
    expect(overview.map((s) => s.groups[0].owner?.owner)).toEqual(ownership.partitions.map((p) => p.owner));
  });

  it('the CLI prints the ownership table and JSON, summarises it in status, and gates on --max-unowned', async () => {
    const stream = unique('own-cli');
    const { a, b } = await twoOwners(stream);
    const table = await runCli(['ownership', stream, 'g']);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toContain(`${stream} / g: 2 members, ${PARTITIONS} partitions`);
    expect(table.stdout).toMatch(/member\s+lease left\s+owns/);
    expect(table.stdout).toMatch(/partition\s+stream\s+owner\s+generation\s+lease left/);
    for (const member of [a, b]) expect(table.stdout).toContain(member);

    // A lease that lapsed in an event-loop stall (a loaded machine) hands partitions over and back:
    // the table is read again until it shows the shared state the instances settled on.
    const parsed = await waitFor(
      async () => {
        const json = await runCli(['ownership', partitionStream(stream, 0), 'g', '--json']);
        expect(json.code).toBe(0);
        const answer = JSON.parse(json.stdout);
        const owns = answer.members.map((m: { owns: number[] }) => m.owns.length).join(',');
        return owns === '2,2' ? answer : null;
      },
      'the CLI to show the partitions shared 2/2',
      60_000,
    );
    expect(parsed.unowned).toEqual([]);
    expect((await runCli(['ownership', stream, 'g', '--max-unowned', '0'])).code).toBe(0);

    const streams = partitionStreams(stream, PARTITIONS).flatMap((s) => ['--stream', s]);
    const status = await runCli(['status', ...streams]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(
      `~ ${stream} / g: exclusive ownership, partitions per instance: ${[a, b].sort().join(' 2, ')} 2`,
    );

    // Both instances closed: they released every partition, so nobody owns any.
    while (closers.length) await closers.pop()!();
    const gate = await runCli(['ownership', stream, 'g', '--max-unowned', '1']);
    expect(gate.code).toBe(1);
    expect(gate.stdout).toMatch(/\(free\)/);
    expect(gate.stderr).toContain(
      `Stream "${stream}" group "g": 4 partitions have no live owner (0 1 2 3), above --max-unowned 1.`,
    );
    const released = await runCli(['status', ...streams]);
    expect(released.stdout).toContain(`~ ${stream} / g: exclusive ownership, partitions per instance: no owner 4`);
  });

  it('the CLI says when a group has no ownership (exit 3) and refuses a bad count (exit 2)', async () => {
    const stream = unique('own-none');
    await redis.xgroup('CREATE', stream, 'g', '$', 'MKSTREAM');
    const none = await runCli(['ownership', stream, 'g']);
    expect(none.code).toBe(3);
    expect(none.stderr).toContain(`Group "g" of stream "${stream}" has no ownership keys`);
    const bad = await runCli(['ownership', stream, 'g', '--partitions', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--partitions must be a whole number >= 1, got "0".');
  });

  it('the console API answers ownership for a group and the overview shows each partition owner', async () => {
    const stream = unique('own-console');
    const { a, b } = await twoOwners(stream);
    const shared = unique('own-shared');
    await redis.xgroup('CREATE', shared, 'g', '$', 'MKSTREAM');
    const c = await startConsoleApp({ streams: [...partitionStreams(stream, PARTITIONS), shared], auditStream: unique('audit') });
    closers.push(() => c.app.close());

    const { status, body } = await c.get(`ownership?${q({ stream: partitionStream(stream, 1), group: 'g' })}`);
    expect(status).toBe(200);
    expect(body.ownership.stream).toBe(stream);
    expect(body.ownership.members.map((m: { member: string }) => m.member)).toEqual([a, b].sort());
    expect(body.ownership.partitions).toHaveLength(PARTITIONS);
    expect(body.ownership.partitions.every((p: { generation: number }) => p.generation >= 1)).toBe(true);
    expect((await c.get(`ownership?${q({ stream: shared, group: 'g' })}`)).body).toEqual({ ownership: null });
    const refused = await c.get(`ownership?${q({ stream, group: 'g', partitions: 'many' })}`);
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe('partitions must be a whole number from 1 to 1024, got "many".');

    const overview = (await c.get('overview')).body as Array<{ stream: string; groups: Array<{ owner: unknown }> }>;
    const owners = overview.map((s) => s.groups[0].owner as { owner: string; generation: number } | null);
    expect(owners.slice(0, PARTITIONS).map((o) => o!.owner)).toEqual(
      body.ownership.partitions.map((p: { owner: string }) => p.owner),
    );
    expect(owners[PARTITIONS]).toBeNull();
  });
});
