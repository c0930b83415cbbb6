// Chaos scenario 12: two consumer groups on one stream, 50 consumers in each.
import { expectNoLoss } from './support/expectations.js';
import { chaosTest } from './support/chaos-test.js';
import { closeOpenScenarios, scaled } from './support/scenario.js';

afterAll(closeOpenScenarios);

describe('chaos: scale', () => {
  chaosTest(
    12,
    'two groups on one stream, 50 consumers each: every group gets every entry once',
    async (s) => {
      const count = scaled(5_000);
      const processes = 5;
      const serversPerProcess = 10;
      const groups = ['billing', 'shipping'];
      // 50 consumer names, each reading both groups: 5 processes x 10 servers (50 Node processes
      // would need ~50 x 2 s of start-up CPU on 2 cores, more than the whole suite's budget).
      const env = {
        IDEMPOTENT: 1,
        GROUPS: groups.join(','),
        SERVERS: serversPerProcess,
        MIN_IDLE: 2_000,
        RECLAIM_MS: 500,
        CONCURRENCY: 4,
        PREFETCH: 16,
      };
      const started = Date.now();
      await s.consumers(
        Array.from({ length: processes }, (_, i) => `p${i}`),
        env,
      );
      const startMs = Date.now() - started;
      await s.produced(s.producer('producer', { COUNT: count, RATE: count / 8 }));
      const r = await s.settle(groups, 90_000);
      const consumersPerGroup = await Promise.all(
        groups.map(async (g) => ((await s.data.xinfo('CONSUMERS', s.stream, g)) as unknown[]).length),
      );
      const rss = await s.peakRssMb();
      s.note(
        `${processes} processes x ${serversPerProcess} servers x ${groups.length} groups (started in ${startMs} ms); ` +
          `consumers per group ${consumersPerGroup.join('/')}; peak RSS ${Math.max(...rss)} MB per process, ` +
          `${rss.reduce((a, b) => a + b, 0)} MB for all; processed counts both groups`,
      );
      return {
        row: s.row(`${count} entries x 2 groups`, r),
        verify: () => {
          expectNoLoss(r);
          expect(r.groups.map((g) => g.processed)).toEqual([count, count]);
          expect(consumersPerGroup).toEqual([50, 50]);
          expect(rss).toHaveLength(processes);
        },
      };
    },
    150_000,
  );
});
