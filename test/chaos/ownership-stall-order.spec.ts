// Issue 38, item 22, with a real process: the only instance of an exclusive partition runs the
// first entry of a key slowly, with the key's next entries queued behind it (concurrency > 1,
// orderingKey) and more waiting for a slot, and is paused (SIGSTOP) past its lease. Nobody can take
// the partition over. When it resumes, the data Redis refuses writes for a moment (CLIENT PAUSE
// WRITE), so the renewal cannot come before the first entry ends: the ownership gate refuses the
// next entry of the key by the local clock. Once the lease is renewed (same generation), that entry
// must still run before every later entry of its key: the refusal ends the epoch, and the PEL is
// replayed in stream order before anything waiting or new starts.
import { partitionStreams } from 'nest-redis-streams';
import { parseRecord } from '../workers/ownership-ledger.js';
import { waitFor } from '../support/helpers.js';
import { mark, owners, ownershipConsumer, runLog, totalPending } from './support/ownership.js';
import { scenarioTest } from './support/chaos-test.js';
import { closeOpenScenarios } from './support/scenario.js';

afterAll(closeOpenScenarios);

const LEASE_MS = 1_000;

// The same with `onDeadLetter: 'block-key'`, whose entries take their key's turn in a script first.
const VARIANTS: Array<[string, Record<string, number>]> = [
  ['orderingKey', {}],
  ["orderingKey with onDeadLetter: 'block-key'", { BLOCK_KEY: 1 }],
];

describe.each(VARIANTS)('chaos: exclusive ownership, a stalled owner that nobody can replace (%s)', (_, extra) => {
  scenarioTest(
    'entries queued behind their key and refused by the gate after the lease ran out run in order once it is renewed',
    async (s) => {
      const env = { PARTITIONS: 1, LEASE_MS, HANDLER_MS: 5, CONCURRENCY: 4, ORDERED: 1, ...extra };
      const a = await ownershipConsumer(s, 'own-a', env);
      await waitFor(async () => (await owners(s.data, s.stream, 1))[0] === a.name, 'a owns the partition');
      // One partition: the stream itself.
      const [stream] = partitionStreams(s.stream, 1);
      // Seq 1 runs; 2-4 take the other slots behind it; 5 and 6 wait for a slot.
      const add = s.data.multi().xadd(stream, '*', 'key', 'q', 'seq', '1', 'slowMs', '1500');
      for (let seq = 2; seq <= 6; seq++) add.xadd(stream, '*', 'key', 'q', 'seq', String(seq));
      await add.exec();
      const log = () => runLog(s);
      await waitFor(async () => (await log()).includes(`start|${a.name}|q|1|${stream}`), 'a started entry 1');
      a.child.kill('SIGSTOP');
      await mark(s, 'stop', a.name);
      await waitFor(async () => (await owners(s.data, s.stream, 1))[0] === '', 'the lease ran out by Redis’ clock', 10_000);
      // No renewal (a write) until entry 1 has ended in the resumed process.
      await s.data.call('CLIENT', 'PAUSE', '20000', 'WRITE');
      try {
        a.child.kill('SIGCONT');
        await mark(s, 'cont', a.name);
        await waitFor(async () => (await log()).includes(`end|${a.name}|q|1|${stream}`), 'entry 1 ended after SIGCONT');
      } finally {
        await s.data.call('CLIENT', 'UNPAUSE');
      }
      await waitFor(async () => (await log()).some((l) => l.startsWith(`end|${a.name}|q|6|`)), 'the key run to its end', 20_000);
      await waitFor(async () => (await totalPending(s.data, s.stream, 1)) === 0, 'nothing pending', 20_000);
      const lines = await log();
      const starts = lines.filter((l) => l.startsWith('start|') && l.includes('|q|')).map((l) => parseRecord(l).seq);
      process.stdout.write(`ownership stall order: starts of key q ${starts.join(', ')}\n`);
      // The same instance all along, its lease renewed under the same generation.
      expect(await owners(s.data, s.stream, 1)).toEqual([a.name]);
      expect(starts).toEqual([1, 2, 3, 4, 5, 6]);
    },
    60_000,
  );
});
