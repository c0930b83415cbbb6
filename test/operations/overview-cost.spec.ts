import { Redis } from 'ioredis';
import { StreamOperations } from 'nest-redis-streams';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startRedis } = require('../../scripts/lib/redis-process.cjs');

const STREAMS = 200;
const GROUPS = ['payments', 'inventory', 'notifications'];

/** Sum of `usec` over INFO commandstats: the time Redis spent executing commands. */
async function redisUsec(redis: Redis): Promise<{ usec: number; calls: number }> {
  const info = await redis.info('commandstats');
  let usec = 0;
  let calls = 0;
  for (const m of info.matchAll(/calls=(\d+),usec=(\d+)/g)) {
    calls += Number(m[1]);
    usec += Number(m[2]);
  }
  return { usec, calls };
}

// On its own redis-server so that the command statistics are this test's alone.
describe('console overview cost (200 streams x 3 groups)', () => {
  let server: { url: string; stop(): Promise<void> };
  let redis: Redis;
  beforeAll(async () => {
    server = await startRedis({ appendonly: false });
    redis = new Redis(server.url);
  }, 30_000);
  afterAll(async () => {
    redis?.disconnect();
    await server?.stop();
  });

  it('reads every figure in two pipelines and reports the Redis time per refresh', async () => {
    const setup = redis.pipeline();
    for (let s = 0; s < STREAMS; s++) {
      const stream = `cost:${s}`;
      for (const group of GROUPS) setup.xgroup('CREATE', stream, group, '0', 'MKSTREAM');
      for (let i = 0; i < 20; i++) setup.xadd(stream, '*', 'n', String(i), 'data', '{"orderId":"o-1","amount":10}');
      setup.xreadgroup('GROUP', 'payments', 'pod-1', 'COUNT', 5, 'STREAMS', stream, '>');
      setup.xadd(`${stream}:dlq`, '*', 'dlq:reason', 'max-deliveries', 'dlq:group', 'payments', 'n', '1');
    }
    await setup.exec();
    const configured = new StreamOperations(redis, { streams: Array.from({ length: STREAMS }, (_, s) => `cost:${s}`) });
    const pipelines = jest.spyOn(redis, 'pipeline');

    const rows: Array<[string, number, number, number]> = [];
    for (let run = 1; run <= 5; run++) {
      await redis.config('RESETSTAT');
      const overview = await configured.overview();
      const { usec, calls } = await redisUsec(redis);
      rows.push([`configured #${run}`, calls - 1, usec, pipelines.mock.calls.length]);
      pipelines.mockClear();
      expect(overview).toHaveLength(STREAMS);
      expect(overview[7].groups.find((g) => g.group === 'payments')).toMatchObject({
        pending: 5,
        lag: 15,
        groupDeadLetters: 1,
        consumers: 1,
      });
    }
    const discovering = new StreamOperations(redis);
    await redis.config('RESETSTAT');
    expect((await discovering.overview()).length).toBe(STREAMS);
    const scanned = await redisUsec(redis);
    rows.push(['discovered (SCAN)', scanned.calls - 1, scanned.usec, pipelines.mock.calls.length]);

    // Two round trips whatever the number of streams: XLEN + XINFO GROUPS, then the figures.
    expect(rows.slice(0, 5).every(([, , , p]) => p === 2)).toBe(true);
    // Per group 5 commands, one of them the dead-letter count script, which runs XLEN and XRANGE
    // inside, TIME and ZCARD of its retry waits (recovery/retry-waits.ts: none wait here, so no
    // HMGET follows), and the HMGET of its ownership hash sent alongside; plus one TIME.
    expect(rows[0][1]).toBe(STREAMS * 2 + STREAMS * GROUPS.length * (5 + 2 + 2 + 1) + 1);
    const table = rows.map(
      ([what, calls, usec, p]) =>
        `${what.padEnd(20)} ${String(calls).padStart(6)} ${String(p).padStart(9)} ${(usec / 1000).toFixed(1).padStart(12)}`,
    );
    process.stdout.write(`\nwhat                  calls pipelines  Redis ms\n${table.join('\n')}\n`);
  }, 60_000);
});
