// Chaos scenarios 5 and 11: poison entries mixed into the load, and malformed or hostile entries.
import type { Redis } from 'ioredis';
import { splitDeadLetterBuffers } from '../../libs/nest-redis-streams/src/dead-letter/dead-letter-record.js';
import { hostileEntries } from '../workers/chaos-hostile.js';
import { expectNoLoss } from './support/expectations.js';
import { FAST_RECOVERY } from './support/profiles.js';
import { Supervisor } from './support/processes.js';
import { chaosTest } from './support/chaos-test.js';
import { closeOpenScenarios, scaled } from './support/scenario.js';

afterAll(closeOpenScenarios);

const FAST = { ...FAST_RECOVERY, RECLAIM_MS: 100, MAX_DELIVERIES: 3 };

/**
 * Hostile entries that were to be parked, whose dead letter does not hold the produced fields byte
 * for byte (the producer's list is rebuilt from the run's seed). Returns their labels.
 */
async function unfaithfulDeadLetters(
  data: Redis,
  dlq: string,
  entries: ReturnType<typeof hostileEntries>,
  produced: Record<string, string>,
) {
  const letters = new Map<string, Buffer[]>();
  for (const [, fields] of await data.xrangeBuffer(dlq, '-', '+')) {
    const { meta, original } = splitDeadLetterBuffers(fields);
    letters.set(meta.id, original.flat());
  }
  const hex = (fields: Array<string | Buffer>) => fields.map((f) => Buffer.from(f).toString('hex')).join(' ');
  const parked = entries.filter((e) => e.expect === 'dead-letter' && e.eventId !== undefined);
  return {
    checked: parked.length,
    binary: parked.filter((e) => e.fields.some((f) => Buffer.isBuffer(f))).length,
    wrong: parked.filter((e) => hex(letters.get(produced[e.eventId!]) ?? []) !== hex(e.fields)).map((e) => e.label),
  };
}

describe('chaos: bad entries', () => {
  chaosTest(
    5,
    'poison entries (2%) mixed in: each dead-lettered after exactly maxDeliveries',
    async (s) => {
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
      s.note(
        `${offBudget.length} parked off the delivery budget; ${fewerRuns.length} with fewer than 3 handler runs ` +
          `(${fewerRuns.map((d) => `${d.deliveries}/${runs.get(d.key) ?? 0}`).join(', ') || 'none'})`,
      );
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
    },
    90_000,
  );

  chaosTest(
    11,
    'malformed and hostile entries: no crash, no prototype pollution, each parked or delivered',
    async (s) => {
      const count = scaled(160);
      const supervisors = await Promise.all(['c0', 'c1'].map((name) => new Supervisor(() => s.consumer(name, FAST)).begin()));
      await s.produced(s.producer('producer', { KIND: 'hostile', COUNT: count, SEED: s.seed, BATCH: 8 }));
      const r = await s.settle(['nest'], 60_000);
      await Promise.all(supervisors.map((sup) => sup.stop()));
      // Written by the consumer processes, where entries are decoded: a handler run that finds
      // Object.prototype changed records it (this Jest process decodes nothing, so a check here
      // could never fail).
      const polluted = await s.ledger.get(s.keys.polluted);
      const reasons = new Set(r.deadLetters.map((d) => d.reason));
      const restarts = supervisors.reduce((n, sup) => n + sup.restarts, 0);
      const entries = hostileEntries(s.run, count, s.seed);
      const fidelity = await unfaithfulDeadLetters(s.data, s.dlq, entries, await s.ledger.hgetall(s.keys.produced));
      s.note(
        `17 kinds (1 MB values, binary bytes, __proto__ keys, bad JSON...); ${restarts} consumer crashes; prototype ${polluted ? 'POLLUTED' : 'intact'}; ` +
          `${fidelity.checked - fidelity.wrong.length}/${fidelity.checked} dead letters byte-exact (${fidelity.binary} with non-UTF-8 bytes)`,
      );
      return {
        row: s.row(`${count} hostile entries`, r),
        verify: () => {
          expectNoLoss(r);
          expect(restarts).toBe(0);
          expect(polluted).toBeNull();
          expect([...reasons].sort()).toEqual(['max-deliveries', 'undecodable']);
          expect(fidelity.binary).toBeGreaterThan(0);
          expect(fidelity.wrong).toEqual([]);
        },
      };
    },
    90_000,
  );
});
