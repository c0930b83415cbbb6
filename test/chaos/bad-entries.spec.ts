// Chaos scenarios 5 and 11: poison entries mixed into the load, and malformed or hostile entries.
import { expectNoLoss } from './support/expectations.js';
import { FAST_RECOVERY } from './support/profiles.js';
import { Supervisor } from './support/processes.js';
import { chaosTest } from './support/chaos-test.js';
import { closeOpenScenarios, scaled } from './support/scenario.js';

afterAll(closeOpenScenarios);

const FAST = { ...FAST_RECOVERY, RECLAIM_MS: 100, MAX_DELIVERIES: 3 };

describe('chaos: bad entries', () => {
  chaosTest(5, 'poison entries (2%) mixed in: each dead-lettered after exactly maxDeliveries', async (s) => {
    const count = scaled(5_000);
    const poisonEvery = 50;
    // A longer min-idle than elsewhere: under this load a stalled event loop can miss a lease
    // renewal, and a reclaim then counts a delivery that no handler ran.
    await s.consumers(['c0', 'c1', 'c2'], { ...FAST, MIN_IDLE: 3_000 });
    await s.produced(s.producer('producer', { COUNT: count, POISON_EVERY: poisonEvery }));
    const r = await s.settle(['nest'], 60_000);
    const runs = r.deliveries.get('nest')!;
    const parked = r.deadLetters.filter((d) => d.reason === 'max-deliveries');
    const offBudget = parked.filter((d) => d.deliveries !== 3);
    const fewerRuns = parked.filter((d) => runs.get(d.key) !== 3);
    s.note(`${offBudget.length} parked off the delivery budget; ${fewerRuns.length} with fewer than 3 handler runs ` +
      `(${fewerRuns.map((d) => `${d.deliveries}/${runs.get(d.key) ?? 0}`).join(', ') || 'none'})`);
    return {
      row: s.row(`${count} entries, ${count / poisonEvery} poison`, r),
      verify: () => {
        expectNoLoss(r);
        expect(parked).toHaveLength(count / poisonEvery);
        expect(offBudget).toEqual([]);
        expect(parked.every((d) => (runs.get(d.key) ?? 0) >= 1 && (runs.get(d.key) ?? 0) <= 3)).toBe(true);
        expect(r.groups[0].processed).toBe(count - count / poisonEvery);
      },
    };
  }, 90_000);

  chaosTest(11, 'malformed and hostile entries: no crash, no prototype pollution, each parked or delivered', async (s) => {
    const count = scaled(160);
    const supervisors = await Promise.all(['c0', 'c1'].map((name) => new Supervisor(() => s.consumer(name, FAST)).begin()));
    await s.produced(s.producer('producer', { KIND: 'hostile', COUNT: count, SEED: s.seed, BATCH: 8 }));
    const r = await s.settle(['nest'], 60_000);
    await Promise.all(supervisors.map((sup) => sup.stop()));
    const polluted = await s.ledger.get(s.keys.polluted);
    const reasons = new Set(r.deadLetters.map((d) => d.reason));
    const restarts = supervisors.reduce((n, sup) => n + sup.restarts, 0);
    s.note(`16 kinds (1 MB values, binary bytes, __proto__ keys, bad JSON...); ${restarts} consumer crashes; prototype ${polluted ? 'POLLUTED' : 'intact'}`);
    return {
      row: s.row(`${count} hostile entries`, r),
      verify: () => {
        expectNoLoss(r);
        expect(restarts).toBe(0);
        expect(polluted).toBeNull();
        expect([...reasons]).toEqual(['undecodable']);
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      },
    };
  }, 90_000);
});
