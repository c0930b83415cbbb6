// Chaos scenarios 7 and 8: handlers slower than min-idle kept by lease renewal, and a graceful
// shutdown (SIGTERM) under load.
import type { XPendingRow } from '../../libs/nest-redis-streams/src/redis/replies.js';
import { waitFor } from '../support/helpers.js';
import { expectNoLoss } from './support/expectations.js';
import { chaosTest } from './support/chaos-test.js';
import { closeOpenScenarios, scaled } from './support/scenario.js';

afterAll(closeOpenScenarios);

describe('chaos: leases and shutdown', () => {
  chaosTest(
    7,
    'slow handlers (3x min-idle) with lease renewal: zero double processing',
    async (s) => {
      const count = scaled(60);
      const minIdle = 500;
      // No idempotency guard: a stolen entry would show as a second effect, not be hidden.
      const env = { IDEMPOTENT: 0, MIN_IDLE: minIdle, HANDLER_MS: 3 * minIdle, RECLAIM_MS: 50, CONCURRENCY: 4, PREFETCH: 8 };
      await s.consumers(['c0', 'c1', 'c2'], env);
      await s.produced(s.producer('producer', { COUNT: count }));
      const r = await s.settle(['nest'], 60_000);
      const stats = await s.stats();
      const runs = [...r.deliveries.get('nest')!.values()];
      s.note(
        `handler ${3 * minIdle} ms vs min-idle ${minIdle} ms; ${stats['lease-renewals'] ?? 0} lease renewals, ` +
          `${stats.reclaimed ?? 0} reclaimed, ${stats['lease-lost'] ?? 0} leases lost, most runs of one entry ${Math.max(...runs)}`,
      );
      return {
        row: s.row(`${count} entries x ${3 * minIdle} ms`, r),
        verify: () => {
          expectNoLoss(r, { idempotent: false });
          expect(r.groups[0].dupEffects).toBe(0);
          expect(runs.every((n) => n === 1)).toBe(true);
          expect(stats.reclaimed ?? 0).toBe(0);
          expect(stats['lease-lost'] ?? 0).toBe(0);
          expect(stats['lease-renewals']).toBeGreaterThan(0);
        },
      };
    },
    90_000,
  );

  chaosTest(
    8,
    'SIGTERM under load: in-flight entries finish and are acked, the rest handed back',
    async (s) => {
      const count = scaled(600);
      const minIdle = 5_000;
      const shutdownMs = 3_000;
      // Handlers slower than the producer: at SIGTERM 8 entries run and more may wait (read ahead).
      const env = {
        IDEMPOTENT: 1,
        MIN_IDLE: minIdle,
        RECLAIM_MS: 100,
        HANDLER_MS: 200,
        CONCURRENCY: 8,
        PREFETCH: 32,
        SHUTDOWN_MS: shutdownMs,
      };
      const [leaving] = await s.consumers(['leaving', 'staying'], env);
      const producer = s.producer('producer', { COUNT: count, RATE: count / 8 });
      await waitFor(async () => (await s.ledger.hlen(s.keys.effects('nest'))) >= count / 5, 'the load to be under way', 20_000);
      const sent = Date.now();
      leaving.child.kill('SIGTERM');
      const closed = await leaving.waitFor((m) => m.type === 'closed', 'a graceful close', shutdownMs + 5_000).catch(() => null);
      const exit = await leaving.exited;
      const exitMs = Date.now() - sent;
      // Right after the exit: what the leaving consumer still owns, and whether it finished any of it.
      const left = (await s.data.xpending(s.stream, 'nest', '-', '+', 10_000, 'leaving')) as XPendingRow[];
      const appliedBy = await s.ledger.hgetall(s.keys.appliedBy('nest'));
      const keyOf = new Map(Object.entries(await s.ledger.hgetall(s.keys.produced)).map(([k, id]) => [id, k]));
      const finishedButPending = left.filter(([id]) => appliedBy[keyOf.get(id) ?? ''] === 'leaving');
      const notHandedBack = left.filter(([, , idle]) => Number(idle) < minIdle - 1_000);
      // Handed-back entries are reclaimable at once: the other consumer takes them long before min-idle.
      const takenOver = Date.now();
      const reclaimMs = await waitFor(
        async () => (await s.data.xpending(s.stream, 'nest', '-', '+', 1, 'leaving')).length === 0 && Date.now() - takenOver,
        'the handed-back entries to be reclaimed',
        2 * minIdle,
      ).catch(() => -1);
      await s.produced(producer);
      const r = await s.settle(['nest'], 60_000);
      const { reclaimed = 0 } = await s.stats();
      s.note(
        `SIGTERM to exit ${exitMs} ms (close ${closed?.closeMs ?? '?'} ms, limit ${shutdownMs} ms); ${left.length} entries handed back ` +
          `(${notHandedBack.length} with idle < min-idle, ${finishedButPending.length} finished but unacked) and left pending at exit; ` +
          `the other consumer reclaimed ${reclaimed} entries, the last of the leaving one's after ${reclaimMs} ms`,
      );
      return {
        row: s.row(`${count} entries`, r),
        verify: () => {
          expect(exit).toEqual({ code: 0, signal: null });
          expect(exitMs).toBeLessThan(shutdownMs + 2_000);
          expect(finishedButPending).toEqual([]);
          expect(notHandedBack).toEqual([]);
          expect(reclaimMs).toBeGreaterThanOrEqual(0);
          expect(reclaimMs).toBeLessThan(minIdle);
          expectNoLoss(r);
        },
      };
    },
    90_000,
  );
});
