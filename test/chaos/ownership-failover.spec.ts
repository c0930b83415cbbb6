// Exclusive partition ownership with real processes: three instances share twelve partitions
// 4/4/4; one is killed with SIGKILL while entries flow, its partitions move to the others within a
// bound derived from the lease, and the run log in the ledger shows that no key ever ran on two
// instances at once and that no key's sequence went backwards.
import { partitionOf, partitionStream } from 'nest-redis-streams';
import { checkRunLog } from '../workers/ownership-ledger.js';
import { waitFor } from '../support/helpers.js';
import { mark, owners, ownershipConsumer, runLog, shares, totalPending } from './support/ownership.js';
import { scenarioTest } from './support/chaos-test.js';
import { closeOpenScenarios } from './support/scenario.js';

afterAll(closeOpenScenarios);

const PARTITIONS = 12;
const LEASE_MS = 1_500;
/**
 * A killed instance's last renewal was at most at the kill, so its leases end within LEASE_MS;
 * the others' next round follows within a third of it. Slack: round trips and two cores shared.
 */
const TAKEOVER_BOUND_MS = LEASE_MS + LEASE_MS / 3;
const SLACK_MS = 1_500;

describe('chaos: exclusive ownership, failover', () => {
  scenarioTest(
    '3 instances share 12 partitions 4/4/4; kill -9 one: its partitions move within the lease bound, no key runs twice at once, per-key order holds',
    async (s) => {
      const names = ['own-a', 'own-b', 'own-c'];
      const env = { PARTITIONS, LEASE_MS, HANDLER_MS: 15 };
      const procs = await Promise.all(names.map((name) => ownershipConsumer(s, name, env)));
      await waitFor(
        async () => Object.values(shares(await owners(s.data, s.stream, PARTITIONS))).join() === '4,4,4',
        'partitions shared 4/4/4',
      );
      const keys = Array.from({ length: 60 }, (_, i) => `key-${i}`);
      const seqs = 30;
      let produced = 0;
      const producing = (async () => {
        for (let seq = 0; seq < seqs; seq++) {
          const batch = s.data.pipeline();
          for (const key of keys) {
            batch.xadd(partitionStream(s.stream, partitionOf(key, PARTITIONS)), '*', 'key', key, 'seq', String(seq));
          }
          await batch.exec();
          produced += keys.length;
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await waitFor(() => produced >= keys.length * 10, 'a third of the entries produced');
      const victim = procs[1];
      const killedAt = Date.now();
      await victim.kill('SIGKILL');
      await mark(s, 'dead', victim.name);
      await waitFor(
        async () => {
          const now = await owners(s.data, s.stream, PARTITIONS);
          return now.every((o) => o !== '' && o !== victim.name);
        },
        'every partition owned by a survivor',
        TAKEOVER_BOUND_MS + SLACK_MS,
      );
      const takeoverMs = Date.now() - killedAt;
      await producing;
      const total = keys.length * seqs;
      await waitFor(
        async () => {
          const { completed } = checkRunLog(await runLog(s));
          return [...completed.values()].reduce((n, list) => n + new Set(list).size, 0) === total;
        },
        `all ${total} entries completed`,
        30_000,
      );
      await waitFor(async () => (await totalPending(s.data, s.stream, PARTITIONS)) === 0, 'nothing pending');
      const log = await runLog(s);
      const { overlaps, backwards, completed } = checkRunLog(log);
      const runs = log.filter((l) => l.startsWith('start|')).length;
      process.stdout.write(
        `ownership failover: takeover ${takeoverMs} ms (bound ${TAKEOVER_BOUND_MS} ms + slack), ` +
          `${total} entries, ${runs} runs (${runs - total} re-runs after the kill), shares after: ${JSON.stringify(
            shares(await owners(s.data, s.stream, PARTITIONS)),
          )}\n`,
      );
      expect(overlaps).toEqual([]);
      expect(backwards).toEqual([]);
      for (const key of keys) expect(new Set(completed.get(key))).toEqual(new Set(Array.from({ length: seqs }, (_, i) => i)));
      expect(Object.values(shares(await owners(s.data, s.stream, PARTITIONS))).sort()).toEqual([6, 6]);
    },
    90_000,
  );
});
