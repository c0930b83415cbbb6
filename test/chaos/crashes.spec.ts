// Chaos scenarios 1, 2 and 6: consumer processes that die (SIGKILL, exit) under load.
import { type ChaosProcess, Supervisor } from './support/processes.js';
import { expectNoLoss } from './support/expectations.js';
import { FAST_RECOVERY } from './support/profiles.js';
import { chaosLoop, chaosTest } from './support/chaos-test.js';
import { type Scenario, closeOpenScenarios, scaled } from './support/scenario.js';

afterAll(closeOpenScenarios);

// Kills can hit an entry many times in a row: a high delivery budget keeps them out of the DLQ.
const FAST = { ...FAST_RECOVERY, MAX_DELIVERIES: 20 };

describe('chaos: consumer crashes', () => {
  chaosTest(
    1,
    'three consumers SIGKILLed and restarted at random while producing',
    async (s: Scenario) => {
      const count = scaled(20_000);
      const slots: ChaosProcess[] = await s.consumers(['c0', 'c1', 'c2'], FAST);
      const producer = s.producer('producer', { COUNT: count, RATE: count / 8 });
      let kills = 0;
      let renamed = 0;
      await chaosLoop(s, { minMs: 500, maxMs: 1_500, active: () => producer.alive, limitMs: 60_000 }, async (round) => {
        const slot = Math.floor(s.random() * slots.length);
        await slots[slot].kill('SIGKILL');
        kills++;
        // Half the restarts keep the name (a pod restarted in place), half come back under a new
        // one (a rescheduled pod): the dead name's entries then wait for another's reclaimer.
        const sameName = s.random() < 0.5;
        if (!sameName) renamed++;
        slots[slot] = s.spawn('chaos-consumer', sameName ? slots[slot].name : `c${slot}-r${round}`, FAST);
      });
      const { produced } = await s.produced(producer);
      await Promise.all(slots.map((p) => p.waitFor((m) => m.type === 'ready', 'ready').catch(() => undefined)));
      // Whatever the last kill left dead comes back, so the run can finish.
      for (const [i, p] of slots.entries()) if (!p.alive) slots[i] = await s.consumer(p.name, FAST);
      const r = await s.settle(['nest'], 60_000);
      s.note(
        `${kills} SIGKILLs (${renamed} restarted under a new name); peak RSS of a one-server consumer process ${Math.max(...(await s.peakRssMb()))} MB`,
      );
      return {
        row: s.row(`${count} entries`, r),
        verify: () => {
          expect(produced).toBe(count);
          expect(kills).toBeGreaterThanOrEqual(3);
          expectNoLoss(r);
          expect(r.groups[0].deadLettered).toBe(0);
        },
      };
    },
    150_000,
  );

  chaosTest(
    2,
    'SIGKILL after the side effect and before the ack: the idempotency guard absorbs the redelivery',
    async (s) => {
      const count = scaled(400);
      const crashEvery = 40;
      // One entry at a time, so that every marked entry is on its first delivery when it runs.
      const supervisor = await new Supervisor(() => s.consumer('pay-1', { ...FAST, CONCURRENCY: 1, PREFETCH: 1 })).begin();
      const producer = s.producer('producer', { COUNT: count, CRASH_EVERY: crashEvery });
      await s.produced(producer);
      const r = await s.settle(['nest'], 60_000);
      await supervisor.stop();
      const crashes = count / crashEvery;
      s.note(`${supervisor.restarts} crashes after the effect, each restarted by the supervisor`);
      return {
        row: s.row(`${count} entries, 1 in ${crashEvery} crashes`, r),
        verify: () => {
          expectNoLoss(r);
          expect(supervisor.restarts).toBe(crashes);
          expect(supervisor.exits.every((e) => e.signal === 'SIGKILL')).toBe(true);
          // Each crash entry ran its handler twice; the second run was skipped by the guard.
          expect(r.groups[0].duplicates).toBeGreaterThanOrEqual(crashes);
        },
      };
    },
    120_000,
  );

  chaosTest(
    6,
    'a handler that exits the process on one entry: it still reaches the dead-letter stream',
    async (s) => {
      const count = scaled(300);
      const exitAt = Math.floor(count / 3);
      // The transport's default read-ahead (none): see repro/replay-inflates-deliveries for more.
      const { PREFETCH: _readAhead, ...rest } = FAST;
      const env = { ...rest, MAX_DELIVERIES: 3, CONCURRENCY: 1 };
      const supervisor = await new Supervisor(() => s.consumer('worker-1', env)).begin();
      await s.produced(s.producer('producer', { COUNT: count, EXIT_AT: exitAt }));
      const r = await s.settle(['nest'], 60_000);
      await supervisor.stop();
      const parked = r.deadLetters.filter((d) => d.reason !== 'payload-trimmed');
      const neverRun = parked.filter((d) => !r.deliveries.get('nest')!.has(d.key));
      s.note(
        `${supervisor.restarts} process exits, restarted by the supervisor; ${parked.length} dead letters, ` +
          `${neverRun.length} of them parked without one handler run`,
      );
      return {
        row: s.row(`${count} entries, 1 exits the process`, r),
        verify: () => {
          expectNoLoss(r);
          expect(parked.map((d) => [d.key, d.reason])).toEqual([[`${s.run}-e${exitAt}`, 'max-deliveries']]);
          expect(supervisor.exits.every((e) => e.code === 3)).toBe(true);
        },
      };
    },
    120_000,
  );
});
