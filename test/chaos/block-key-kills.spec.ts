// onDeadLetter: 'block-key' across a fleet: three consumer processes share a partitioned stream
// with exclusive ownership (so a key's order holds across them). The first entry of some keys
// fails until an operator fixes it, so those keys get blocked and their later entries held;
// processes are SIGKILLed while entries are produced, while keys are blocked and while they are
// being released after the re-drive. The ledger (one list of every run's start, end and failure,
// in one total order) must show that no entry of a key started before every earlier entry of that
// key had completed at least once, and that every entry completed. The control run (the same
// fleet with 'continue', no kills) shows the check finding the disorder block-key prevents.
import { DeadLetterService, partitionOf, partitionStream } from 'nest-redis-streams';
import { blockedKeysKey, heldEntriesKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { ownershipLedger, parseRecord } from '../workers/ownership-ledger.js';
import { waitFor } from '../support/helpers.js';
import { mark, ownershipConsumer, runLog, totalPending } from './support/ownership.js';
import type { ChaosProcess } from './support/processes.js';
import { scenarioTest } from './support/chaos-test.js';
import { type Scenario, closeOpenScenarios } from './support/scenario.js';

afterAll(closeOpenScenarios);

const PARTITIONS = 4;
const KEYS = Array.from({ length: 8 }, (_, i) => `acct-${i}`);
const POISONED = KEYS.slice(0, 4);
const POISON_SEQ = 6;
const SEQS = 20;
const ENV = { PARTITIONS, LEASE_MS: 1_000, MIN_IDLE: 1_000, HANDLER_MS: 2, CONCURRENCY: 4, ORDERED: 1, POISON: 1, BLOCK_KEY: 1 };

interface StoredBlock {
  state: string;
  deadLetter: string;
  deadLetterStream: string;
}

/** Starts of an entry before every earlier entry of its key had completed once; entries never completed. */
function checkKeyOrder(lines: string[], keys: string[], seqs: number): { early: string[]; missing: string[] } {
  const completed = new Map(keys.map((key) => [key, new Set<number>()]));
  const early: string[] = [];
  for (const line of lines) {
    const r = parseRecord(line);
    const done = completed.get(r.key);
    if (!done) continue;
    if (r.kind === 'end') done.add(r.seq);
    if (r.kind !== 'start') continue;
    for (let seq = 1; seq < r.seq; seq++) {
      if (!done.has(seq)) {
        early.push(`${r.key}: ${r.consumer} started seq ${r.seq} before seq ${seq} had completed`);
        break;
      }
    }
  }
  const missing: string[] = [];
  for (const [key, done] of completed) for (let seq = 1; seq <= seqs; seq++) if (!done.has(seq)) missing.push(`${key}:${seq}`);
  return { early, missing };
}

/** Reads and writes of one scenario: its keys' partitions, blocks, held entries, completed runs. */
function scenarioSteps(s: Scenario) {
  const partitionOfKey = (key: string) => partitionStream(s.stream, partitionOf(key, PARTITIONS));
  const blocks = async () => {
    const all = new Map<string, StoredBlock>();
    for (let p = 0; p < PARTITIONS; p++) {
      const hash = await s.data.hgetall(blockedKeysKey(partitionStream(s.stream, p), 'g'));
      for (const [key, raw] of Object.entries(hash)) all.set(key, JSON.parse(raw) as StoredBlock);
    }
    return all;
  };
  const held = async (keys: string[]) => {
    let total = 0;
    for (const key of keys) total += await s.data.xlen(heldEntriesKey(partitionOfKey(key), 'g', key));
    return total;
  };
  const ends = async (keys: string[]) =>
    (await runLog(s)).filter((l) => l.startsWith('end|') && keys.includes(parseRecord(l).key)).length;
  const produce = async (from: number, to: number) => {
    for (let seq = from; seq <= to; seq++) {
      for (const key of KEYS) await s.data.xadd(partitionOfKey(key), '*', 'key', key, 'seq', String(seq));
    }
  };
  return { partitionOfKey, blocks, held, ends, produce };
}

describe("chaos: onDeadLetter 'block-key' with SIGKILLs", () => {
  scenarioTest(
    'no key runs out of order and none loses an entry while instances are killed around blocked and released keys',
    async (s) => {
      const { blocks, held, ends, produce } = scenarioSteps(s);
      let started = 0;
      const fleet: ChaosProcess[] = [];
      const startOne = async () => fleet.push(await ownershipConsumer(s, `bk-${++started}`, ENV));
      const killOne = async (why: string) => {
        const victim = fleet.shift()!;
        await victim.kill('SIGKILL');
        await mark(s, 'dead', victim.name);
        process.stdout.write(`block-key chaos: SIGKILL ${victim.name} ${why}\n`);
        await startOne();
      };

      await s.ledger.sadd(ownershipLedger(s.run).poison, ...POISONED.map((key) => `${key}:${POISON_SEQ}`));
      for (let i = 0; i < 3; i++) await startOne();
      await produce(1, SEQS / 2);
      await killOne('while entries are produced');
      await produce(SEQS / 2 + 1, SEQS);

      const healthy = KEYS.filter((key) => !POISONED.includes(key));
      await waitFor(async () => (await ends(healthy)) >= healthy.length * SEQS, 'the keys without poison handled', 60_000);
      await waitFor(
        async () => [...(await blocks()).values()].filter((b) => b.state === 'parked').length === POISONED.length,
        'the poisoned keys parked',
        30_000,
      );
      await waitFor(
        async () => (await held(POISONED)) === POISONED.length * (SEQS - POISON_SEQ),
        'their later entries held',
        30_000,
      );
      await killOne('while keys are blocked');
      expect(await totalPending(s.data, s.stream, PARTITIONS)).toBe(0);

      // The operator fixes the data and re-drives the dead letters; an instance dies mid-release.
      await s.ledger.del(ownershipLedger(s.run).poison);
      const letters = new DeadLetterService(s.data);
      const parked = [...(await blocks()).entries()];
      for (const [, block] of parked.slice(0, 2)) await letters.redrive(block.deadLetterStream, block.deadLetter);
      await waitFor(
        async () => [...(await blocks()).values()].some((b) => b.state === 'releasing'),
        'a key being released',
        30_000,
      );
      await killOne('while keys are being released');
      for (const [, block] of parked.slice(2)) await letters.redrive(block.deadLetterStream, block.deadLetter);

      await waitFor(
        async () => (await ends(POISONED)) >= POISONED.length * (SEQS - POISON_SEQ + 1),
        'the released keys handled',
        60_000,
      );
      await waitFor(async () => (await blocks()).size === 0, 'no key blocked', 30_000);
      await waitFor(async () => (await totalPending(s.data, s.stream, PARTITIONS)) === 0, 'nothing pending', 30_000);
      const { early, missing } = checkKeyOrder(await runLog(s), KEYS, SEQS);
      process.stdout.write(
        `block-key chaos: ${KEYS.length} keys x ${SEQS} entries, ${POISONED.length} blocked and released, 3 SIGKILLs; ` +
          `out of order ${early.length}, never completed ${missing.length}\n`,
      );
      expect(early).toEqual([]);
      expect(missing).toEqual([]);
      for (const proc of fleet) await proc.kill('SIGKILL');
    },
    180_000,
  );
  scenarioTest(
    "control: the same fleet with onDeadLetter 'continue' runs the poisoned keys' later entries before the re-driven one",
    async (s) => {
      const { partitionOfKey, ends, produce } = scenarioSteps(s);
      await s.ledger.sadd(ownershipLedger(s.run).poison, ...POISONED.map((key) => `${key}:${POISON_SEQ}`));
      const fleet: ChaosProcess[] = [];
      for (let i = 1; i <= 3; i++) fleet.push(await ownershipConsumer(s, `cont-${i}`, { ...ENV, BLOCK_KEY: 0 }));
      await produce(1, SEQS);
      await waitFor(
        async () => (await ends(KEYS)) >= KEYS.length * SEQS - POISONED.length,
        'all but the poisoned entries handled',
        60_000,
      );
      const dlqs = [...new Set(POISONED.map((key) => `${partitionOfKey(key)}:dlq`))];
      const letters = async () => (await Promise.all(dlqs.map((dlq) => s.data.xrange(dlq, '-', '+')))).flat();
      await waitFor(async () => (await letters()).length === POISONED.length, 'the poisoned entries parked', 30_000);
      await s.ledger.del(ownershipLedger(s.run).poison);
      const service = new DeadLetterService(s.data);
      for (const dlq of dlqs) for (const [id] of await s.data.xrange(dlq, '-', '+')) await service.redrive(dlq, id);
      await waitFor(async () => (await ends(KEYS)) >= KEYS.length * SEQS, 'the re-driven entries handled', 30_000);
      const { early, missing } = checkKeyOrder(await runLog(s), KEYS, SEQS);
      process.stdout.write(
        `block-key chaos control ('continue'): out of order ${early.length}, never completed ${missing.length}\n`,
      );
      // The check sees the disorder block-key prevents: each poisoned key's later entries started early.
      expect(new Set(early.map((line) => line.split(':')[0]))).toEqual(new Set(POISONED));
      expect(missing).toEqual([]);
      for (const proc of fleet) await proc.kill('SIGKILL');
    },
    120_000,
  );
});
