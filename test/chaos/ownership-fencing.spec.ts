// Fencing with real processes: an instance is paused (SIGSTOP) in the middle of a slow handler,
// past its lease; the other instance takes its partitions over and runs the entry itself. After
// SIGCONT the paused instance must neither ack that entry nor start anything of a partition it
// lost (until a later rebalance grants it one again under a new generation).
import { partitionStream } from 'nest-redis-streams';
import { ownershipLedger, parseRecord } from '../workers/ownership-ledger.js';
import { waitFor } from '../support/helpers.js';
import { mark, owners, ownershipConsumer, resumeAndSettle, runLog, shares, startsWithoutGrant } from './support/ownership.js';
import { scenarioTest } from './support/chaos-test.js';
import { closeOpenScenarios } from './support/scenario.js';

afterAll(closeOpenScenarios);

const PARTITIONS = 4;
const LEASE_MS = 1_000;

describe('chaos: exclusive ownership, fencing', () => {
  scenarioTest(
    'an instance paused past its lease (SIGSTOP, then SIGCONT) cannot ack or start anything of the partitions it lost',
    async (s) => {
      const env = { PARTITIONS, LEASE_MS, HANDLER_MS: 5 };
      const a = await ownershipConsumer(s, 'own-a', env);
      const b = await ownershipConsumer(s, 'own-b', env);
      await waitFor(
        async () => Object.values(shares(await owners(s.data, s.stream, PARTITIONS))).join() === '2,2',
        'partitions shared 2/2',
      );
      const held = (await owners(s.data, s.stream, PARTITIONS)).map((o, p) => (o === a.name ? p : -1)).filter((p) => p >= 0);
      const slowStream = partitionStream(s.stream, held[0]);
      await s.data.xadd(slowStream, '*', 'key', 'slow', 'seq', '0', 'slowMs', '2500');
      for (let seq = 1; seq <= 5; seq++) await s.data.xadd(slowStream, '*', 'key', 'slow', 'seq', String(seq));
      const log = () => runLog(s);
      await waitFor(async () => (await log()).includes(`start|${a.name}|slow|0|${slowStream}`), 'a started the slow entry');
      a.child.kill('SIGSTOP');
      await mark(s, 'stop', a.name);
      await waitFor(
        async () => (await owners(s.data, s.stream, PARTITIONS)).every((o) => o === b.name),
        'b owns every partition',
        LEASE_MS * 3,
      );
      await waitFor(
        async () => (await log()).includes(`end|${b.name}|slow|5|${slowStream}`),
        'b ran the slow key to its end',
        15_000,
      );
      // a finishes its slow handler (or sees it aborted), finds out it lost its partitions, rejoins.
      // What a had acked before SIGCONT: nothing new is added after b's run, so any ack by a from
      // here on could only be its late run's.
      const ackedBeforeCont = Number((await s.ledger.hget(ownershipLedger(s.run).stats, 'own-a:acked')) ?? 0);
      const lines = await resumeAndSettle(s, s.data, a, PARTITIONS, /^(end|aborted)\|own-a\|slow\|0\|/);
      const cont = lines.indexOf(`mark|cont|${a.name}`);
      // After SIGCONT, a start by a on a partition needs a fresh grant of that partition first.
      const unfenced = startsWithoutGrant(lines, a.name);
      const stats = await s.ledger.hgetall(ownershipLedger(s.run).stats);
      const paused = lines.find((l) => /^(end|aborted)\|own-a\|slow\|0\|/.test(l))!;
      process.stdout.write(
        `ownership fencing: a's paused run ended as "${paused.split('|')[0]}", writes refused (ack or lease renewal) ${stats['own-a:writes-refused'] ?? 0}, ` +
          `partitions lost ${stats['own-a:revoked-lost']}, starts by a after SIGCONT ${lines.slice(cont).filter((l) => l.startsWith(`start|${a.name}`)).length} (all under new grants)\n`,
      );
      expect(unfenced).toEqual([]);
      // Its late run of the slow entry was aborted before the ack, or its ack or lease renewal was refused by the fence.
      // Its late run produced no ack: aborted before it, refused by the fence, or never sent because a
      // learnt it had lost the partition first (the ack batcher drops a revoked generation's acks).
      const ackedAfterCont = Number(stats['own-a:acked'] ?? 0);
      expect(
        paused.startsWith('aborted|') || Number(stats['own-a:writes-refused'] ?? 0) >= 1 || ackedAfterCont === ackedBeforeCont,
      ).toBe(true);
      // b ran the slow key in order, 0 to 5.
      const bSlow = lines.filter((l) => l.startsWith(`end|${b.name}|slow|`)).map((l) => parseRecord(l).seq);
      expect(bSlow).toEqual([0, 1, 2, 3, 4, 5]);
    },
    60_000,
  );
});
