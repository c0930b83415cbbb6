// Issue 24, items 6 and 7 (with a taker), with real processes: an instance runs the first entry
// of a key slowly, with the key's next entries queued behind it (concurrency > 1, orderingKey),
// and is paused (SIGSTOP) past its lease. The other instance takes the partition over and runs the
// key's entries itself, in order. After SIGCONT the paused instance must not start the queued
// entries: every handler start passes the ownership gate, not only the first one of a read.
import { partitionStream } from 'nest-redis-streams';
import { parseRecord } from '../workers/ownership-ledger.js';
import { waitFor } from '../support/helpers.js';
import { mark, owners, ownershipConsumer, resumeAndSettle, runLog, shares, startsWithoutGrant } from './support/ownership.js';
import { scenarioTest } from './support/chaos-test.js';
import { closeOpenScenarios } from './support/scenario.js';

afterAll(closeOpenScenarios);

const PARTITIONS = 2;
const LEASE_MS = 1_000;

describe('chaos: exclusive ownership, entries queued behind their key', () => {
  scenarioTest(
    'a paused instance starts none of the entries queued behind its running one once it resumes; the taker runs the key in order',
    async (s) => {
      const env = { PARTITIONS, LEASE_MS, HANDLER_MS: 5, CONCURRENCY: 4, ORDERED: 1 };
      const a = await ownershipConsumer(s, 'own-a', env);
      const b = await ownershipConsumer(s, 'own-b', env);
      await waitFor(
        async () => Object.values(shares(await owners(s.data, s.stream, PARTITIONS))).join() === '1,1',
        'partitions shared 1/1',
      );
      const held = (await owners(s.data, s.stream, PARTITIONS)).indexOf(a.name);
      const queued = partitionStream(s.stream, held);
      await s.data
        .multi()
        .xadd(queued, '*', 'key', 'q', 'seq', '1', 'slowMs', '2500')
        .xadd(queued, '*', 'key', 'q', 'seq', '2')
        .xadd(queued, '*', 'key', 'q', 'seq', '3')
        .exec();
      const log = () => runLog(s);
      await waitFor(async () => (await log()).includes(`start|${a.name}|q|1|${queued}`), 'a started entry 1');
      a.child.kill('SIGSTOP');
      await mark(s, 'stop', a.name);
      await waitFor(
        async () => (await owners(s.data, s.stream, PARTITIONS)).every((o) => o === b.name),
        'b owns both',
        LEASE_MS * 5,
      );
      await waitFor(async () => (await log()).includes(`end|${b.name}|q|3|${queued}`), 'b ran the key to its end', 15_000);
      // By the time a noticed its loss and the entries written afterwards are done, a start of a's
      // queued entries would be in the log.
      const lines = await resumeAndSettle(s, s.data, a, PARTITIONS, /^(end|aborted)\|own-a\|q\|1\|/, 3);
      const unfenced = startsWithoutGrant(lines, a.name);
      const starts = lines.filter((l) => l.startsWith('start|') && l.includes('|q|')).map((l) => parseRecord(l));
      process.stdout.write(
        `ownership queued: starts of key q ${starts.map((r) => `${r.consumer}:${r.seq}`).join(', ')}; starts by a after SIGCONT without a new grant ${unfenced.length}\n`,
      );
      expect(unfenced).toEqual([]);
      // The key's starts never go back: a's first run of 1, then b's 1, 2, 3 (never 1 after 2 or 3).
      const seqs = starts.map((r) => r.seq);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
      const bEnds = lines.filter((l) => l.startsWith(`end|${b.name}|q|`)).map((l) => parseRecord(l).seq);
      expect(bEnds).toEqual([1, 2, 3]);
    },
    60_000,
  );
});
