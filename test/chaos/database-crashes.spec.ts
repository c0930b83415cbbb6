// Chaos scenarios 13 and 14: exactly-once effects with the transactional inbox and outbox on a
// real PostgreSQL, with real processes SIGKILLed at the two points where delivery duplicates.
import { orderEventId } from '../workers/db-chaos-schema.js';
import { pendingCount } from '../support/helpers.js';
import { probeCapabilities } from '../../libs/nest-redis-streams/src/redis/capabilities.js';
import { chaosTest } from './support/chaos-test.js';
import {
  counters,
  dbRow,
  payments,
  reconcileRun,
  republished,
  scenarioDatabase,
  settleCharges,
  spawnDbWorker,
  usePostgres,
} from './support/database.js';
import { Supervisor } from './support/processes.js';
import { closeOpenScenarios } from './support/scenario.js';

afterAll(closeOpenScenarios);
const postgres = usePostgres();

describe('chaos: exactly-once effects on PostgreSQL, processes SIGKILLed', () => {
  chaosTest(
    13,
    'payments SIGKILLed after the charge committed and before XACK: the charge exists once after the restart',
    async (s) => {
      const d = await scenarioDatabase(postgres(), s);
      const orders = 60;
      const crashEvery = 20;
      // One entry at a time: each marked order is on its first delivery when it runs.
      const supervisor = await new Supervisor(() => payments(s, d, 'payments-1', { CONCURRENCY: 1 })).begin();
      spawnDbWorker(s, d, 'db-orders', 'orders', { ORDERS: orders, CRASH_EVERY: crashEvery });
      const e = await settleCharges(s, d, orders, 40_000);
      await supervisor.stop();
      const r = await reconcileRun(s, d);
      const { outcomes } = await counters(s);
      const pending = await pendingCount(s.data, s.stream, 'payments');
      await d.close();
      s.note(
        `${supervisor.restarts} SIGKILLs after COMMIT, each restarted; inbox: ${outcomes.applied ?? 0} applied, ${outcomes.duplicate ?? 0} duplicates acked without a charge`,
      );
      return {
        row: dbRow(s, `${orders} orders, 1 in ${crashEvery} crashes after commit`, e, r, outcomes.duplicate ?? 0),
        verify: () => {
          expect(supervisor.restarts).toBe(orders / crashEvery);
          expect(supervisor.exits.every((x) => x.signal === 'SIGKILL')).toBe(true);
          expect(outcomes['crashed-after-commit']).toBe(orders / crashEvery);
          // Each crashed order came back once and found its inbox row.
          expect(outcomes.duplicate).toBe(orders / crashEvery);
          expect(e).toEqual({ orders, chargedOrders: orders, charges: orders, inboxRows: orders, unsent: 0 });
          expect(pending).toBe(0);
          expect(r.byCharges).toEqual({ expected: orders, appliedOnce: orders, missing: [], duplicated: [], deadLettered: [] });
          expect(r.byInbox).toEqual(r.byCharges);
        },
      };
    },
    60_000,
  );

  chaosTest(
    14,
    'relay SIGKILLed between XADD and marking sent: the batch is published again (the stream drops the copies where XADD IDMP exists) and charged once',
    async (s) => {
      const d = await scenarioDatabase(postgres(), s);
      // Redis 8.6+: the relay's XADDs carry IDMP <producer> <event id>, so a re-published event adds no entry.
      const idmp = (await probeCapabilities(s.data)).all.idmp;
      const orders = 40;
      const hungEvent = orderEventId(`${s.run}-o15`);
      await payments(s, d, 'payments-1', { CONCURRENCY: 4 });
      // Every order is in the outbox first, so rounds lock full batches of 10 in order.
      const first = spawnDbWorker(s, d, 'db-orders', 'relay-1', {
        ORDERS: orders,
        BATCH: 10,
        RELAY_AFTER_ORDERS: 1,
        HANG_AFTER_XADD: hungEvent,
      });
      const hung = await first.waitFor((m) => m.type === 'hung-after-xadd', 'the relay to stop after an XADD');
      const exit = await first.kill('SIGKILL');
      const copiesBefore = (await republished(s)).entries;
      spawnDbWorker(s, d, 'db-orders', 'relay-2');
      const e = await settleCharges(s, d, orders, 30_000);
      const stream = await republished(s);
      const r = await reconcileRun(s, d);
      const { outcomes } = await counters(s);
      await d.close();
      const extra = stream.entries - orders;
      s.note(
        `relay killed after XADD of ${String(hung.eventId)} (${copiesBefore} entries in Redis, none marked sent in that round); ` +
          `${extra} events published twice, inbox absorbed ${outcomes.duplicate ?? 0}`,
      );
      return {
        row: dbRow(s, `${orders} orders, relay batch 10`, e, r, outcomes.duplicate ?? 0),
        verify: () => {
          expect(exit.signal).toBe('SIGKILL');
          if (idmp) {
            // The second relay published the unsent batch again: not one second entry, nothing to absorb.
            expect(copiesBefore).toBeGreaterThan(0);
            expect({ extra, copies: stream.copies.size, absorbed: outcomes.duplicate ?? 0 }).toEqual({
              extra: 0,
              copies: 0,
              absorbed: 0,
            });
            expect(e).toEqual({ orders, chargedOrders: orders, charges: orders, inboxRows: orders, unsent: 0 });
            return;
          }
          expect(stream.copies.get(hungEvent)).toBe(2);
          expect(extra).toBe(stream.copies.size);
          expect([...stream.copies.values()].every((n) => n === 2)).toBe(true);
          expect(outcomes.duplicate).toBe(extra);
          expect(e).toEqual({ orders, chargedOrders: orders, charges: orders, inboxRows: orders, unsent: 0 });
          expect(r.byCharges).toEqual({ expected: orders, appliedOnce: orders, missing: [], duplicated: [], deadLettered: [] });
        },
      };
    },
    60_000,
  );
});
