// Shared steps of the ownership chaos specs (test/chaos/ownership-*.spec.ts).
import type { Cluster, Redis } from 'ioredis';
import { partitionStreams } from 'nest-redis-streams';
import { partitionOwnerKey } from '../../../libs/nest-redis-streams/src/ownership/ownership-keys.js';
import { ownershipLedger } from '../../workers/ownership-ledger.js';
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
