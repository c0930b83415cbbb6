// Chaos scenario 17: a batch handler's process SIGKILLed in the middle of a batch, three times,
// while entries are produced; every entry must be processed (lost 0), with no effect applied twice.
import type { ChaosProcess } from './support/processes.js';
import { expectNoLoss } from './support/expectations.js';
import { chaosTest } from './support/chaos-test.js';
import { type Scenario, closeOpenScenarios, scaled } from './support/scenario.js';

afterAll(closeOpenScenarios);

const BATCH = { BATCH_SIZE: 50, BATCH_WAIT_MS: 20, HANDLER_MS: 100, MIN_IDLE: 1_000, RECLAIM_MS: 200 };

describe('chaos: batch handlers', () => {
  chaosTest(
    17,
    'batch handler SIGKILLed in the middle of a batch, three times, while producing',
    async (s: Scenario) => {
      const count = scaled(3_000);
      // The batch worker is not in the suite's list of workers; the process helper only needs its file name.
      const start = async (name: string): Promise<ChaosProcess> => {
        const proc = s.spawn('chaos-batch-consumer', name, BATCH);
        await proc.waitFor((m) => m.type === 'ready', 'ready');
        return proc;
      };
      let victim = await start('b0');
      await start('b1');
      const producer = s.producer('producer', { COUNT: count, RATE: count / 5 });
      const killedBatches: number[] = [];
      for (let round = 1; round <= 3; round++) {
        const batch = await victim.waitFor((m) => m.type === 'batch' && Number(m.size) > 1, 'a batch running');
        await victim.kill('SIGKILL');
        killedBatches.push(Number(batch.size));
        // Round 2 comes back under a new name (a rescheduled pod): its PEL is left to the reclaimers.
        victim = await start(round === 2 ? 'b0-moved' : 'b0');
      }
      const { produced } = await s.produced(producer);
      const r = await s.settle(['nest'], 40_000);
      s.note(`SIGKILLed in batches of ${killedBatches.join(', ')} entries (each handler holds its batch 100 ms)`);
      return {
        row: s.row(`${count} entries, batches ≤ 50`, r),
        verify: () => {
          expect(produced).toBe(count);
          expect(killedBatches).toHaveLength(3);
          expectNoLoss(r);
          expect(r.groups[0].deadLettered).toBe(0);
        },
      };
    },
    90_000,
  );
});
