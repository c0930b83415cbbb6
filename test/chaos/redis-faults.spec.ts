// Chaos scenarios 3 and 4: the data Redis killed and restarted under load, and its client
// connections dropped (CLIENT KILL) during blocking reads, acks and dead-lettering.
import { expectNoLoss } from './support/expectations.js';
import { FAST_RECOVERY as FAST } from './support/profiles.js';
import { chaosLoop, chaosTest } from './support/chaos-test.js';
import { closeOpenScenarios, scaled } from './support/scenario.js';

afterAll(closeOpenScenarios);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('chaos: Redis faults', () => {
  chaosTest(
    3,
    'Redis SIGKILLed and restarted twice under load (appendonly yes, appendfsync always)',
    async (s) => {
      const count = scaled(4_000);
      await s.consumers(['c0', 'c1'], FAST);
      const producer = s.producer('producer', { COUNT: count, RATE: count / 10 });
      const downtimes: number[] = [];
      await chaosLoop(
        s,
        { minMs: 2_000, maxMs: 3_500, active: () => producer.alive && downtimes.length < 2, limitMs: 30_000 },
        async () => {
          const down = Date.now();
          await s.server.kill('SIGKILL');
          await pause(300 + s.random() * 700); // the outage
          await s.server.start();
          downtimes.push(Date.now() - down);
        },
      );
      const { produced, retries } = await s.produced(producer);
      const r = await s.settle(['nest'], 60_000);
      s.note(`${downtimes.length} Redis kills (down ${downtimes.join(' ms, ')} ms); ${retries} XADD retries by the producer`);
      return {
        row: s.row(`${count} entries`, r),
        verify: () => {
          expect(downtimes).toHaveLength(2);
          expect(produced).toBe(count);
          expectNoLoss(r);
        },
      };
    },
    120_000,
    { redis: { appendfsync: 'always' } },
  );

  chaosTest(
    4,
    'client connections killed (CLIENT KILL TYPE normal) during reads, acks and dead-lettering',
    async (s) => {
      const count = scaled(3_000);
      const poisonEvery = 50;
      await s.consumers(['c0', 'c1'], { ...FAST, MAX_DELIVERIES: 3 });
      const producer = s.producer('producer', { COUNT: count, RATE: count / 10, POISON_EVERY: poisonEvery });
      let killed = 0;
      const rounds = await chaosLoop(s, { minMs: 100, maxMs: 400, active: () => producer.alive, limitMs: 30_000 }, async () => {
        killed += Number(await s.data.call('CLIENT', 'KILL', 'TYPE', 'normal'));
      });
      const { retries } = await s.produced(producer);
      const r = await s.settle(['nest'], 60_000);
      const parked = r.deadLetters.filter((d) => d.reason === 'max-deliveries');
      // A dropped XADD reply that ioredis re-sent writes the event twice (two entry ids): each copy
      // is parked once, so poison events are counted by event id (entries parked twice: parkedTwice).
      const poisonParked = new Set(parked.map((d) => d.key));
      const copies = r.groups[0].copiesParked;
      s.note(
        `${rounds} CLIENT KILL rounds dropped ${killed} connections; ${retries} XADD retries; ${copies} re-sent poison copies parked`,
      );
      return {
        row: s.row(`${count} entries, 2% poison`, r),
        verify: () => {
          expect(rounds).toBeGreaterThan(10);
          expectNoLoss(r);
          expect(poisonParked.size).toBe(count / poisonEvery);
          // A dropped reply can make the count run ahead of the handler runs, never fall short.
          expect(parked.every((d) => d.deliveries >= 3)).toBe(true);
        },
      };
    },
    120_000,
  );
});
