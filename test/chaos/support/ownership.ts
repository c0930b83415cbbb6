// Shared steps of the ownership chaos specs (test/chaos/ownership-*.spec.ts).
import type { Cluster, Redis } from 'ioredis';
import { partitionStream, partitionStreams } from 'nest-redis-streams';
import { partitionOwnerKey } from '../../../libs/nest-redis-streams/src/keys/index.js';
import { ownershipLedger, parseRecord } from '../../workers/ownership-ledger.js';
import { waitFor } from '../../support/helpers.js';
import { ChaosProcess, type ChaosWorker } from './processes.js';
import type { Scenario } from './scenario.js';

/** The worker's file name; processes.ts lists the suite's other workers in its ChaosWorker type. */
const OWNERSHIP_WORKER: ChaosWorker = 'ownership-consumer';

/** Starts an ownership consumer process; resolves once it listens. */
export async function ownershipConsumer(s: Scenario, name: string, env: Record<string, string | number>): Promise<ChaosProcess> {
  const all = {
    DATA_URL: s.server.url,
    LEDGER_URL: process.env.CHAOS_LEDGER_URL!,
    RUN: s.run,
    STREAM: s.stream,
    CONSUMER: name,
    LOGS: process.env.CHAOS_LOGS ?? '0',
    ...env,
  };
  const proc = ChaosProcess.spawn(
    OWNERSHIP_WORKER,
    name,
    Object.fromEntries(Object.entries(all).map(([k, v]) => [k, String(v)])),
    s.logDir,
  );
  s.processes.add(proc);
  await proc.waitFor((m) => m.type === 'ready', 'ready');
  return proc;
}

/** The consumer name owning each partition now ('' when free), read from the owner hashes. */
export async function owners(data: Redis | Cluster, stream: string, partitions: number): Promise<string[]> {
  const [seconds, micros] = await data.time();
  const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  const rows = await Promise.all(
    partitionStreams(stream, partitions).map((p) => data.hmget(partitionOwnerKey(p, 'g'), 'owner', 'until')),
  );
  return rows.map(([owner, until]) => (owner && Number(until) >= now ? owner.split('#')[0] : ''));
}

/** How many partitions each consumer owns. */
export function shares(current: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const owner of current) if (owner) out[owner] = (out[owner] ?? 0) + 1;
  return out;
}

/** Appends a marker (`mark|dead|<consumer>`, `mark|cont|<consumer>`) to the run log. */
export async function mark(s: Scenario, what: string, consumer: string): Promise<void> {
  await s.ledger.rpush(ownershipLedger(s.run).log, `mark|${what}|${consumer}`);
}

export async function runLog(s: Scenario): Promise<string[]> {
  return s.ledger.lrange(ownershipLedger(s.run).log, 0, -1);
}

export async function totalPending(data: Redis | Cluster, stream: string, partitions: number): Promise<number> {
  let total = 0;
  for (const p of partitionStreams(stream, partitions)) total += Number(((await data.xpending(p, 'g')) as [number])[0]);
  return total;
}

/**
 * Resumes a consumer paused past its lease (SIGCONT, marked `mark|cont|<name>` in the run log) and
 * waits until the run it was paused in ended (`pausedRun` matches that record), it noticed its
 * loss, and `perPartition` entries written afterwards to every partition (keys `after-<p>`) were
 * handled and nothing is pending: by then, whatever the resumed process would still start is in
 * the log. Returns the run log.
 */
export async function resumeAndSettle(
  s: Scenario,
  data: Redis | Cluster,
  paused: ChaosProcess,
  partitions: number,
  pausedRun: RegExp,
  perPartition = 5,
): Promise<string[]> {
  paused.child.kill('SIGCONT');
  await mark(s, 'cont', paused.name);
  await waitFor(async () => (await runLog(s)).some((l) => pausedRun.test(l)), `${paused.name}'s paused run ended`);
  await waitFor(
    async () => Number(await s.ledger.hget(ownershipLedger(s.run).stats, `${paused.name}:revoked-lost`)) >= 1,
    `${paused.name} saw its loss`,
  );
  for (let p = 0; p < partitions; p++) {
    for (let seq = 0; seq < perPartition; seq++) {
      await data.xadd(partitionStream(s.stream, p), '*', 'key', `after-${p}`, 'seq', String(seq));
    }
  }
  await waitFor(
    async () =>
      (await runLog(s)).filter((l) => l.startsWith('end|') && l.includes('|after-')).length >= partitions * perPartition,
    'the entries produced after SIGCONT handled',
  );
  await waitFor(async () => (await totalPending(data, s.stream, partitions)) === 0, 'nothing pending');
  return runLog(s);
}

/**
 * Starts by `consumer` after its `mark|cont` record on a partition it had not been granted again
 * first (a `mark|assigned|<consumer>|…` record for that partition): starts outside the fence.
 */
export function startsWithoutGrant(lines: string[], consumer: string): string[] {
  const granted = new Set<string>();
  const unfenced: string[] = [];
  for (const line of lines.slice(lines.indexOf(`mark|cont|${consumer}`))) {
    const r = parseRecord(line);
    if (r.kind === 'mark' && r.consumer === 'assigned' && r.key === consumer) granted.add(r.stream);
    if (r.kind === 'start' && r.consumer === consumer && !granted.has(r.stream)) unfenced.push(line);
  }
  return unfenced;
}
