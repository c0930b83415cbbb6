// Chaos scenarios 15 and 16: the transactional inbox and outbox on a real PostgreSQL under load,
// with the database server stopped and started mid-run, and a large run checked by reconcile().
import { waitFor } from '../support/helpers.js';
import { chaosTest } from './support/chaos-test.js';
import {
  counters,
  dbRow,
  payments,
  reconcileRun,
  scenarioDatabase,
  settleCharges,
  spawnDbWorker,
  usePostgres,
} from './support/database.js';
import { closeOpenScenarios, scaled } from './support/scenario.js';

afterAll(closeOpenScenarios);
const postgres = usePostgres();

describe('chaos: exactly-once effects on PostgreSQL under load', () => {
  chaosTest(
    15,
    'PostgreSQL stopped and started under load: no order lost, handlers retry, the relay resumes',
    async (s) => {
      const d = await scenarioDatabase(postgres(), s);
      const orders = 1_000;
      // Charges take 20 ms (a provider call) so that a backlog waits in Redis when the server stops.
      const env = { CONCURRENCY: 4, HANDLER_MS: 20, MAX_DELIVERIES: 50, RETRY_MS: 50, MIN_IDLE: 1_000 };
      await Promise.all([payments(s, d, 'payments-1', env), payments(s, d, 'payments-2', env)]);
      spawnDbWorker(s, d, 'db-orders', 'orders', { ORDERS: orders, PER_TX: 10, RATE: 250 });
      await waitFor(async () => Number((await counters(s)).outcomes.applied ?? 0) >= 150, '150 charges before the stop', 20_000);
      const stoppedAt = Date.now();
      await postgres().kill('SIGINT');
      // Down until both sides noticed: a handler failed and an order write was retried.
      let atStop = await counters(s);
      try {
        await waitFor(
          async () => {
            atStop = await counters(s);
            return (atStop.outcomes.failed ?? 0) >= 1 && (atStop.relay['order-write-retries'] ?? 0) >= 1;
          },
          'a failed charge and a retried order write while PostgreSQL is down',
          20_000,
        );
      } catch (err) {
        s.note(`counters while down: ${JSON.stringify(atStop)}`);
        throw err;
      } finally {
        await postgres().start();
      }
      const downMs = Date.now() - stoppedAt;
      const e = await settleCharges(s, d, orders, 40_000);
      const r = await reconcileRun(s, d);
      const c = await counters(s);
      await d.close();
      s.note(
        `PostgreSQL down ${downMs} ms (fast shutdown, then start): ${c.outcomes.failed ?? 0} failed charge attempts retried, ` +
          `${c.relay['order-write-retries'] ?? 0} order transactions retried, ${c.relay['publish-failures'] ?? 0} publish failures; ` +
          `${atStop.outcomes.applied ?? 0} charges before the stop`,
      );
      return {
        row: dbRow(s, `${orders} orders at 250/s, 2 payments processes`, e, r, c.outcomes.duplicate ?? 0),
        verify: () => {
          expect(e).toEqual({ orders, chargedOrders: orders, charges: orders, inboxRows: orders, unsent: 0 });
          expect(r.byCharges).toEqual({ expected: orders, appliedOnce: orders, missing: [], duplicated: [], deadLettered: [] });
          expect(r.byInbox).toEqual(r.byCharges);
          expect(c.outcomes.failed).toBeGreaterThanOrEqual(1);
        },
      };
    },
    90_000,
  );

  chaosTest(
    16,
    'a large run with a payments process SIGKILLed mid-way reconciles: 0 missing, 0 duplicate effects',
    async (s) => {
      const d = await scenarioDatabase(postgres(), s);
      const orders = scaled(10_000);
      const env = { CONCURRENCY: 16, MIN_IDLE: 1_000 };
      const procs = await Promise.all(['payments-1', 'payments-2', 'payments-3'].map((name) => payments(s, d, name, env)));
      spawnDbWorker(s, d, 'db-orders', 'orders', { ORDERS: orders, PER_TX: 100, BATCH: 500 });
      await waitFor(async () => Number((await counters(s)).outcomes.applied ?? 0) >= orders / 3, 'a third charged', 60_000);
      await procs[0].kill('SIGKILL');
      const e = await settleCharges(s, d, orders, 60_000);
      const r = await reconcileRun(s, d);
      const c = await counters(s);
      await d.close();
      s.note(
        `payments-1 SIGKILLed after a third; its in-flight entries were reclaimed; inbox absorbed ${c.outcomes.duplicate ?? 0}`,
      );
      return {
        row: dbRow(s, `${orders} orders, 3 payments processes`, e, r, c.outcomes.duplicate ?? 0),
        verify: () => {
          expect(e).toEqual({ orders, chargedOrders: orders, charges: orders, inboxRows: orders, unsent: 0 });
          expect(r.byCharges).toEqual({ expected: orders, appliedOnce: orders, missing: [], duplicated: [], deadLettered: [] });
          expect(r.byInbox).toEqual(r.byCharges);
        },
      };
    },
    120_000,
  );
});
