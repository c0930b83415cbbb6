import type { Redis } from 'ioredis';
import { grantOf, ROLE_NEEDS } from '../../libs/nest-redis-streams/src/cli/commands/doctor-roles.js';
import { patchFloorOf } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { readmeAclLines } from '../ops/acl-users.js';
import { redisClient, unique } from '../support/helpers.js';
import { runCli } from './run-cli.js';

// CommonJS helper shared with the scripts: private redis-servers configured as each test needs.
const { startRedis } = require('../../scripts/lib/redis-process.cjs') as {
  startRedis(options?: {
    appendonly?: boolean;
    extraArgs?: string[];
  }): Promise<{ url: string; port: number; stop(): Promise<void> }>;
};

type Finding = { check: string; level: string; node: string; message: string };

async function doctor(url: string, args: string[] = []) {
  const run = await runCli(['doctor', '--url', url, '--json', ...args]);
  const report = JSON.parse(run.stdout) as { capabilities: Record<string, unknown>; findings: Finding[] };
  const level = (check: string) => report.findings.filter((f) => f.check === check).map((f) => f.level);
  return { ...run, report, level };
}

async function floorOf(redis: Redis) {
  const info = await redis.info('server');
  const valkey = /^server_name:valkey/m.test(info);
  const version = new RegExp(`^${valkey ? 'valkey' : 'redis'}_version:(.+)$`, 'm').exec(info)![1].trim();
  return patchFloorOf(valkey ? 'valkey' : 'redis', version);
}

describe('nest-redis-streams doctor (the compiled binary, spawned, against real servers)', () => {
  const started: Array<{ stop(): Promise<void> }> = [];
  const clients: Redis[] = [];
  afterAll(async () => {
    for (const c of clients) await c.quit();
    for (const s of started) await s.stop();
  });

  it('exits 1 naming each problem of a misconfigured server: allkeys-lru eviction, no persistence', async () => {
    const server = await startRedis({ appendonly: false, extraArgs: ['--maxmemory-policy', 'allkeys-lru'] });
    started.push(server);
    const run = await doctor(server.url);
    expect(run.code).toBe(1);
    expect(run.level('eviction')).toEqual(['problem']);
    expect(run.level('persistence')).toEqual(['problem']);
    expect(run.level('maxmemory')).toEqual(['warning']);
    expect(run.level('lua')).toEqual(['ok']);
    expect(run.stderr).toMatch(
      /^eviction \(127\.0\.0\.1:\d+\): maxmemory-policy is allkeys-lru: .*Set maxmemory-policy noeviction\.$/m,
    );
    expect(run.stderr).toMatch(/^persistence \(127\.0\.0\.1:\d+\): No persistence \(AOF off, no RDB save schedule\)/m);
    expect(run.report.capabilities).toEqual(
      expect.objectContaining({ claim: expect.any(Boolean), idmp: expect.any(Boolean), nodes: [expect.any(Object)] }),
    );
    // The text form says the same and ends with the count.
    const text = await runCli(['doctor', '--url', server.url]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^problem\s+eviction\s+127\.0\.0\.1:\d+\s+maxmemory-policy is allkeys-lru/m);
    expect(text.stdout).toMatch(/\d problem\(s\) found\.$/m);
  }, 60_000);

  it('passes a well-configured server (AOF, noeviction, a maxmemory), failing only on the patch floor of its version', async () => {
    const server = await startRedis({
      appendonly: true,
      extraArgs: ['--maxmemory', '512mb', '--maxmemory-policy', 'noeviction'],
    });
    started.push(server);
    const admin = redisClient(server.url);
    clients.push(admin);
    const floor = await floorOf(admin);
    // Where the server has IDMP, its window covers a producer's restart.
    const idmpWindow = (await admin.config('GET', 'stream-idmp-duration')) as string[];
    if (idmpWindow.length > 0) await admin.config('SET', 'stream-idmp-duration', '600');
    const run = await doctor(server.url);
    expect(run.report.findings.filter((f) => f.level !== 'ok' && f.check !== 'patch-floor')).toEqual([]);
    expect(run.level('patch-floor')).toEqual([floor.ok ? 'ok' : 'problem']);
    expect(run.code).toBe(floor.ok ? 0 : 1);
    if (!floor.ok) expect(run.stderr).toContain(`is below ${floor.floor}, the first release of its line with the fix`);
  }, 60_000);

  it("checks the connecting user's ACL against its role, naming what is missing and the ACL line", async () => {
    const server = await startRedis({ appendonly: true, extraArgs: ['--maxmemory', '512mb'] });
    started.push(server);
    const admin = redisClient(server.url);
    clients.push(admin);
    const passwords = { consumer: 'c-pw', producer: 'p-pw', operator: 'o-pw' };
    for (const [, ...args] of readmeAclLines(passwords)) await admin.call('ACL', ...args);
    const stream = `app:${unique('doctor').replace(/^t:/, '')}`;
    const url = (user: string, pw: string) => `redis://${user}:${pw}@127.0.0.1:${server.port}`;

    for (const role of ['consumer', 'producer', 'operator'] as const) {
      const ok = await doctor(url(`nrs-${role}`, passwords[role]), ['--role', role, '--stream', stream]);
      expect({ role, acl: ok.report.findings.find((f) => f.check === 'acl') }).toEqual({
        role,
        acl: expect.objectContaining({ level: 'ok' }),
      });
    }
    // The consumer without XAUTOCLAIM (the README's own example of a missing grant) and outside its keys.
    await admin.call('ACL', 'SETUSER', 'nrs-consumer', '-xautoclaim');
    const missing = await doctor(url('nrs-consumer', passwords.consumer), ['--role', 'consumer', '--stream', stream]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /^acl \(127\.0\.0\.1:\d+\): The user may not run XAUTOCLAIM on "app:.*", which role consumer needs\. Grant them with `ACL SETUSER <user> \+xautoclaim`/m,
    );
    const elsewhere = await doctor(url('nrs-consumer', passwords.consumer), ['--role', 'consumer', '--stream', 'billing:orders']);
    expect(elsewhere.stderr).toMatch(/may not run XREADGROUP, XREAD, XACK, .* on "billing:orders"/);
    // The producer may not do what a consumer does.
    const wrongRole = await doctor(url('nrs-producer', passwords.producer), ['--role', 'consumer', '--stream', stream]);
    expect(wrongRole.stderr).toMatch(/may not run .*XREADGROUP.* which role consumer needs/);
    // A user that may not even run INFO is an ACL problem doctor names (exit 1), not Redis failing (4).
    await admin.call('ACL', 'SETUSER', 'nrs-consumer', '-info');
    const noInfo = await doctor(url('nrs-consumer', passwords.consumer), ['--role', 'consumer', '--stream', stream]);
    expect({ code: noInfo.code, acl: noInfo.report.findings }).toEqual({
      code: 1,
      acl: [
        expect.objectContaining({
          check: 'acl',
          level: 'problem',
          message: expect.stringMatching(/NOPERM.*'info'.*needs \+info/),
        }),
      ],
    });
  }, 90_000);

  it('knows the same commands per role as the README ACL lines', () => {
    const lines = readmeAclLines({});
    for (const [role, needs] of Object.entries(ROLE_NEEDS)) {
      const line = lines.find((l) => l[2] === `nrs-${role}`)!;
      const granted = line.filter((w) => w.startsWith('+')).map((w) => w.slice(1));
      expect({ role, needs: [...new Set(needs.map(grantOf))].sort() }).toEqual({ role, needs: [...new Set(granted)].sort() });
    }
  });

  it('refuses an unknown role with exit code 2', async () => {
    const run = await runCli(['doctor', '--role', 'admin']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--role must be one of consumer, producer, operator, got "admin"/);
  });
});
