// The notes' relayer as a test: nonces come from a plain counter (GET, then SET), which is safe
// only while exactly one instance consumes. Single-active mode (one partition, exclusive
// ownership), three instances, the active one killed with SIGKILL in the middle of the run: every
// nonce is issued exactly once and in entry order.
import { ownershipLedger } from '../workers/ownership-ledger.js';
import { waitFor } from '../support/helpers.js';
import { owners, ownershipConsumer, totalPending } from './support/ownership.js';
import { scenarioTest } from './support/chaos-test.js';
import { closeOpenScenarios } from './support/scenario.js';

afterAll(closeOpenScenarios);

const LEASE_MS = 1_000;

describe('chaos: exclusive ownership, single active consumer', () => {
  scenarioTest(
    'relayer nonces from a plain counter: 3 instances, the active one killed mid-run, every nonce once and in order',
    async (s) => {
      const env = { PARTITIONS: 1, LEASE_MS, HANDLER_MS: 5, MODE: 'nonce' };
      const procs = await Promise.all(['relay-a', 'relay-b', 'relay-c'].map((name) => ownershipConsumer(s, name, env)));
      const keys = ownershipLedger(s.run);
      const total = 300;
      let produced = 0;
      const producing = (async () => {
        for (; produced < total; produced++) {
          await s.data.xadd(s.stream, '*', 'key', 'tx', 'seq', String(produced));
          if (produced % 10 === 9) await new Promise((r) => setTimeout(r, 50));
        }
      })();
      await waitFor(async () => (await s.ledger.llen(keys.issued)) >= 60, 'the first nonces issued');
      const [active] = await owners(s.data, s.stream, 1);
      const victim = procs.find((p) => p.name === active)!;
      const killedAt = Date.now();
      await victim.kill('SIGKILL');
      const beforeKill = await s.ledger.llen(keys.issued);
      const survivor = await waitFor(async () => {
        const [now] = await owners(s.data, s.stream, 1);
        return now !== '' && now !== victim.name ? now : undefined;
      }, 'a standby took over');
      const takeoverMs = Date.now() - killedAt;
      await producing;
      await waitFor(async () => (await s.ledger.llen(keys.issued)) >= total, `all ${total} nonces issued`, 30_000);
      await waitFor(async () => (await totalPending(s.data, s.stream, 1)) === 0, 'nothing pending');
      const issued = await s.ledger.lrange(keys.issued, 0, -1);
      process.stdout.write(
        `ownership nonce: ${victim.name} killed after ${beforeKill} nonces; ${survivor} took over in ${takeoverMs} ms ` +
          `(lease ${LEASE_MS} ms); ${issued.length} nonces issued\n`,
      );
      expect(issued).toEqual(Array.from({ length: total }, (_, i) => `${i}|tx:${i}`));
    },
    60_000,
  );

  scenarioTest(
    'control: the same relayer with shared consumption (every instance reads) issues some nonce twice',
    async (s) => {
      const env = { PARTITIONS: 1, LEASE_MS, HANDLER_MS: 5, MODE: 'nonce', OWNERSHIP: 'shared' };
      await Promise.all(['relay-a', 'relay-b', 'relay-c'].map((name) => ownershipConsumer(s, name, env)));
      const keys = ownershipLedger(s.run);
      const total = 150;
      const batch = s.data.pipeline();
      for (let seq = 0; seq < total; seq++) batch.xadd(s.stream, '*', 'key', 'tx', 'seq', String(seq));
      await batch.exec();
      await waitFor(async () => (await s.ledger.hlen(keys.byEntry)) >= total, `all ${total} entries given a nonce`, 30_000);
      const nonces = (await s.ledger.lrange(keys.issued, 0, -1)).map((line) => line.split('|')[0]);
      const repeated = nonces.length - new Set(nonces).size;
      process.stdout.write(`ownership nonce control (shared): ${nonces.length} issued, ${repeated} nonces issued twice\n`);
      expect(repeated).toBeGreaterThan(0);
    },
    60_000,
  );
});
