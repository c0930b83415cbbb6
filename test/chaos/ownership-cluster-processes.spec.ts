// Exclusive partition ownership with real processes on a real Redis Cluster (3 masters, no
// replicas: no Redis node is killed here, only instances). The partition streams, their owner
// hashes and the members key spread over the masters, so every claim, renewal and fenced write
// goes to the node of its own slot. The same proof as ownership-failover, -fencing and -nonce on
// one node: kill -9 one of 3 instances over 12 partitions (takeover within the lease bound, no key
// on two instances at once, per-key order); SIGSTOP one past its lease (no ack, no start after
// SIGCONT of a partition it lost); the relayer's nonces in single-active mode with the active
// instance killed (every nonce once, in order).
import { Cluster } from 'ioredis';
import { partitionOf, partitionStream, partitionStreams } from 'nest-redis-streams';
import { slotOf } from '../../libs/nest-redis-streams/src/keys/index.js';
import { checkRunLog, ownershipLedger, parseRecord } from '../workers/ownership-ledger.js';
import { waitFor } from '../support/helpers.js';
import {
  mark,
  owners,
  ownershipConsumer,
  resumeAndSettle,
  runLog,
  shares,
  startsWithoutGrant,
  totalPending,
} from './support/ownership.js';
import { scenarioTest } from './support/chaos-test.js';
import type { Scenario } from './support/scenario.js';
import { closeOpenScenarios } from './support/scenario.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startCluster } = require('../../scripts/lib/redis-cluster.cjs') as {
  startCluster(options: { masters: number; replicas: number }): Promise<{
    startupNodes: Array<{ host: string; port: number }>;
    stop(): Promise<void>;
  }>;
};

let cluster: Awaited<ReturnType<typeof startCluster>>;
/** The spec's own client of the cluster (the scenario's single-node data Redis stays unused). */
let redis: Cluster;

beforeAll(async () => {
  cluster = await startCluster({ masters: 3, replicas: 0 });
  redis = new Cluster(cluster.startupNodes, { redisOptions: { maxRetriesPerRequest: 3 } });
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
}, 60_000);
afterAll(async () => {
  await closeOpenScenarios();
  redis?.disconnect();
  await cluster?.stop();
});

/** An ownership consumer process connected to the cluster. */
const clusterConsumer = (s: Scenario, name: string, env: Record<string, string | number>) =>
  ownershipConsumer(s, name, { CLUSTER_NODES: JSON.stringify(cluster.startupNodes), ...env });

/** How many masters serve the partitions' slots (their owner hashes share those slots). */
function mastersServing(streams: string[]): number {
  return new Set(streams.map((stream) => redis.slots[slotOf(stream)][0])).size;
}

describe('chaos: exclusive ownership on a Redis Cluster of 3 masters', () => {
  const PARTITIONS = 12;
  const LEASE_MS = 1_500;
  // The README's bound for a killed instance: its leases end within LEASE_MS of the kill, the
  // survivors' next round follows within a third of it. Slack: round trips, two shared cores.
  const TAKEOVER_BOUND_MS = LEASE_MS + LEASE_MS / 3;
  const SLACK_MS = 1_500;

  scenarioTest(
    '3 instances share 12 partitions 4/4/4; kill -9 one: its partitions move within the lease bound, no key runs twice at once, per-key order holds',
    async (s) => {
      const streams = partitionStreams(s.stream, PARTITIONS);
      const masters = mastersServing(streams);
      expect(masters).toBeGreaterThan(1);
      const env = { PARTITIONS, LEASE_MS, HANDLER_MS: 15 };
      const procs = await Promise.all(['own-a', 'own-b', 'own-c'].map((name) => clusterConsumer(s, name, env)));
      await waitFor(
        async () => Object.values(shares(await owners(redis, s.stream, PARTITIONS))).join() === '4,4,4',
        'partitions shared 4/4/4',
      );
      const keys = Array.from({ length: 60 }, (_, i) => `key-${i}`);
      const seqs = 30;
      let produced = 0;
      const producing = (async () => {
        for (let seq = 0; seq < seqs; seq++) {
          // One pipeline per partition: a cluster pipeline must stay within one slot.
          const batches = streams.map(() => redis.pipeline());
          for (const key of keys) {
            const p = partitionOf(key, PARTITIONS);
            batches[p].xadd(streams[p], '*', 'key', key, 'seq', String(seq));
          }
          await Promise.all(batches.map((b) => b.exec()));
          produced += keys.length;
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await waitFor(() => produced >= keys.length * 10, 'a third of the entries produced');
      const victim = procs[1];
      const lostPartitions = (await owners(redis, s.stream, PARTITIONS)).filter((o) => o === victim.name).length;
      const killedAt = Date.now();
      await victim.kill('SIGKILL');
      await mark(s, 'dead', victim.name);
      await waitFor(
        async () => (await owners(redis, s.stream, PARTITIONS)).every((o) => o !== '' && o !== victim.name),
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
        20_000,
      );
      await waitFor(async () => (await totalPending(redis, s.stream, PARTITIONS)) === 0, 'nothing pending');
      const log = await runLog(s);
      const { overlaps, backwards, completed } = checkRunLog(log);
      const runs = log.filter((l) => l.startsWith('start|')).length;
      const after = shares(await owners(redis, s.stream, PARTITIONS));
      process.stdout.write(
        `ownership on a cluster, failover: partitions on ${masters} masters, ${lostPartitions} partitions of the killed ` +
          `instance owned elsewhere after ${takeoverMs} ms (bound ${TAKEOVER_BOUND_MS} ms + slack), ${total} entries, ` +
          `${runs} runs (${runs - total} re-runs after the kill), shares after: ${JSON.stringify(after)}\n`,
      );
      expect(overlaps).toEqual([]);
      expect(backwards).toEqual([]);
      for (const key of keys) expect(new Set(completed.get(key))).toEqual(new Set(Array.from({ length: seqs }, (_, i) => i)));
      expect(Object.values(after).sort()).toEqual([6, 6]);
    },
    45_000,
  );

  scenarioTest(
    'an instance paused past its lease (SIGSTOP, then SIGCONT) cannot ack or start anything of the partitions it lost',
    async (s) => {
      const partitions = 4;
      const leaseMs = 1_000;
      const env = { PARTITIONS: partitions, LEASE_MS: leaseMs, HANDLER_MS: 5 };
      const a = await clusterConsumer(s, 'own-a', env);
      const b = await clusterConsumer(s, 'own-b', env);
      await waitFor(
        async () => Object.values(shares(await owners(redis, s.stream, partitions))).join() === '2,2',
        'partitions shared 2/2',
      );
      const held = (await owners(redis, s.stream, partitions)).map((o, p) => (o === a.name ? p : -1)).filter((p) => p >= 0);
      const slowStream = partitionStream(s.stream, held[0]);
      await redis.xadd(slowStream, '*', 'key', 'slow', 'seq', '0', 'slowMs', '2500');
      for (let seq = 1; seq <= 5; seq++) await redis.xadd(slowStream, '*', 'key', 'slow', 'seq', String(seq));
      const log = () => runLog(s);
      await waitFor(async () => (await log()).includes(`start|${a.name}|slow|0|${slowStream}`), 'a started the slow entry');
      a.child.kill('SIGSTOP');
      await mark(s, 'stop', a.name);
      await waitFor(
        async () => (await owners(redis, s.stream, partitions)).every((o) => o === b.name),
        'b owns every partition',
        leaseMs * 3,
      );
      await waitFor(async () => (await log()).includes(`end|${b.name}|slow|5|${slowStream}`), 'b ran the slow key to its end');
      // What a had acked before SIGCONT: nothing new is added after b's run, so any ack by a from
      // here on could only be its late run's.
      const ackedBeforeCont = Number((await s.ledger.hget(ownershipLedger(s.run).stats, 'own-a:acked')) ?? 0);
      const lines = await resumeAndSettle(s, redis, a, partitions, /^(end|aborted)\|own-a\|slow\|0\|/);
      const cont = lines.indexOf(`mark|cont|${a.name}`);
      // After SIGCONT, a start by a on a partition needs a fresh grant of that partition first.
      const unfenced = startsWithoutGrant(lines, a.name);
      const stats = await s.ledger.hgetall(ownershipLedger(s.run).stats);
      const paused = lines.find((l) => /^(end|aborted)\|own-a\|slow\|0\|/.test(l))!;
      const ackedSlow = lines.filter((l) => l.startsWith(`end|${b.name}|slow|`)).map((l) => parseRecord(l).seq);
      process.stdout.write(
        `ownership on a cluster, fencing: a's paused run ended as "${paused.split('|')[0]}", writes refused ` +
          `${stats['own-a:writes-refused'] ?? 0}, partitions lost ${stats['own-a:revoked-lost']}, starts by a after SIGCONT ` +
          `${lines.slice(cont).filter((l) => l.startsWith(`start|${a.name}`)).length} (all under new grants)\n`,
      );
      expect(unfenced).toEqual([]);
      // Its late run was aborted before the ack, or the fence refused its ack or lease renewal.
      // Its late run produced no ack: aborted before it, refused by the fence, or never sent because a
      // learnt it had lost the partition first (the ack batcher drops a revoked generation's acks).
      const ackedAfterCont = Number(stats['own-a:acked'] ?? 0);
      expect(
        paused.startsWith('aborted|') || Number(stats['own-a:writes-refused'] ?? 0) >= 1 || ackedAfterCont === ackedBeforeCont,
      ).toBe(true);
      expect(ackedSlow).toEqual([0, 1, 2, 3, 4, 5]);
    },
    30_000,
  );

  scenarioTest(
    'relayer nonces from a plain counter, single active consumer: 3 instances, the active one killed mid-run, every nonce once and in order',
    async (s) => {
      const leaseMs = 1_000;
      const env = { PARTITIONS: 1, LEASE_MS: leaseMs, HANDLER_MS: 5, MODE: 'nonce' };
      const procs = await Promise.all(['relay-a', 'relay-b', 'relay-c'].map((name) => clusterConsumer(s, name, env)));
      const keys = ownershipLedger(s.run);
      const total = 300;
      let produced = 0;
      const producing = (async () => {
        for (; produced < total; produced++) {
          await redis.xadd(s.stream, '*', 'key', 'tx', 'seq', String(produced));
          if (produced % 10 === 9) await new Promise((r) => setTimeout(r, 50));
        }
      })();
      await waitFor(async () => (await s.ledger.llen(keys.issued)) >= 60, 'the first nonces issued');
      const [active] = await owners(redis, s.stream, 1);
      const victim = procs.find((p) => p.name === active)!;
      const killedAt = Date.now();
      await victim.kill('SIGKILL');
      const beforeKill = await s.ledger.llen(keys.issued);
      const survivor = await waitFor(async () => {
        const [now] = await owners(redis, s.stream, 1);
        return now !== '' && now !== victim.name ? now : undefined;
      }, 'a standby took over');
      const takeoverMs = Date.now() - killedAt;
      await producing;
      await waitFor(async () => (await s.ledger.llen(keys.issued)) >= total, `all ${total} nonces issued`);
      await waitFor(async () => (await totalPending(redis, s.stream, 1)) === 0, 'nothing pending');
      const issued = await s.ledger.lrange(keys.issued, 0, -1);
      process.stdout.write(
        `ownership on a cluster, nonce: ${victim.name} killed after ${beforeKill} nonces; ${survivor} took over in ` +
          `${takeoverMs} ms (lease ${leaseMs} ms); ${issued.length} nonces issued\n`,
      );
      expect(issued).toEqual(Array.from({ length: total }, (_, i) => `${i}|tx:${i}`));
    },
    30_000,
  );
});
