// What one seed decides: the workload's options, the events and what each asks of its handlers,
// and the fault schedule. Everything comes from one PRNG in a fixed order, so a seed always gives
// the same plan (timing on a real machine differs; the checker judges promises, not interleavings).
import { seededRandom } from '../workers/chaos-hostile.js';
import type { NemesisPayload, WorkloadOptions } from '../workers/nemesis-history.js';

export type FaultKind =
  'sigkill' | 'sigstop' | 'client-kill' | 'client-pause' | 'redis-restart' | 'deploy' | 'scale-up' | 'scale-down' | 'redrive';

/** One step of the nemesis (or the operator), `atMs` after production starts. */
export interface Fault {
  atMs: number;
  kind: FaultKind;
  /** Instance slot (0-2) for process faults. */
  target?: number;
  /** How long a stop or pause lasts, or how long a killed instance stays down. */
  durationMs?: number;
}

export interface PlannedEvent {
  eventId: string;
  payload: NemesisPayload;
  delayMs?: number;
}

export interface Plan {
  seed: number;
  options: Omit<WorkloadOptions, 'stream'>;
  /** Events per second the producer writes. */
  rate: number;
  events: PlannedEvent[];
  faults: Fault[];
}

/** Instances the fleet starts with (a scale-up adds one more for a while). */
export const FLEET_SIZE = 3;

const FAULT_WEIGHTS: Array<[FaultKind, number]> = [
  ['sigkill', 3],
  ['sigstop', 2],
  ['client-kill', 2],
  ['client-pause', 2],
  ['redis-restart', 1],
  ['deploy', 2],
  ['scale-up', 1],
  ['redrive', 2],
];

export function makePlan(seed: number): Plan {
  const random = seededRandom(seed);
  const between = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];
  const chance = (p: number) => random() < p;

  const minIdleTimeMs = pick([800, 1_000, 1_500]);
  const options = {
    partitions: pick([2, 4]),
    concurrency: pick([2, 4, 8]),
    maxDeliveries: between(3, 5),
    retryBackoffMs: pick([20, 50, 100]),
    minIdleTimeMs,
    ownershipLeaseMs: pick([1_500, 2_000]),
  };
  const rate = between(25, 45);
  const count = between(200, 350);
  const keys = Array.from({ length: between(4, 10) }, (_, i) => `k${i}`);
  const poisonRate = pick([0.01, 0.02, 0.04]);
  const events: PlannedEvent[] = [];
  for (let seq = 0; seq < count; seq++) {
    const eventId = `s${seed}-e${seq}`;
    const delayed = chance(0.05);
    const payload: NemesisPayload = { seq, key: delayed ? `delayed-${seq}` : pick(keys) };
    if (chance(poisonRate)) payload.poison = true;
    else if (chance(0.06)) payload.failFirst = between(1, options.maxDeliveries - 2);
    if (chance(0.05)) payload.retryLaterMs = chance(0.5) ? between(50, minIdleTimeMs / 2) : between(minIdleTimeMs * 2, 4_000);
    if (chance(0.1)) payload.slowMs = between(20, 300);
    events.push({ eventId, payload, ...(delayed ? { delayMs: between(200, 3_000) } : {}) });
  }
  const produceMs = (count / rate) * 1_000;
  const faults: Fault[] = [];
  const total = FAULT_WEIGHTS.reduce((sum, [, w]) => sum + w, 0);
  for (let n = between(3, 6); n > 0; n--) {
    let roll = random() * total;
    const kind = FAULT_WEIGHTS.find(([, w]) => (roll -= w) < 0)![0];
    const atMs = between(500, Math.round(produceMs) + 2_000);
    const target = between(0, FLEET_SIZE - 1);
    if (kind === 'sigkill') faults.push({ atMs, kind, target, durationMs: between(100, 1_500) });
    else if (kind === 'sigstop') faults.push({ atMs, kind, target, durationMs: between(minIdleTimeMs + 500, 4_000) });
    else if (kind === 'client-pause') faults.push({ atMs, kind, durationMs: between(100, 1_000) });
    else if (kind === 'deploy') faults.push({ atMs, kind, target });
    else if (kind === 'scale-up') {
      faults.push({ atMs, kind });
      faults.push({ atMs: atMs + between(2_000, 6_000), kind: 'scale-down' });
    } else faults.push({ atMs, kind });
  }
  faults.sort((a, b) => a.atMs - b.atMs);
  return { seed, options, rate, events, faults };
}

/** The plan on one line: what the seed chose, then each step of the schedule. */
export function describePlan(plan: Plan): string {
  const o = plan.options;
  const count = (test: (e: PlannedEvent) => boolean) => plan.events.filter(test).length;
  const workload =
    `events=${plan.events.length}@${plan.rate}/s partitions=${o.partitions} concurrency=${o.concurrency} ` +
    `maxDeliveries=${o.maxDeliveries} backoff=${o.retryBackoffMs}ms minIdle=${o.minIdleTimeMs}ms lease=${o.ownershipLeaseMs}ms ` +
    `poison=${count((e) => !!e.payload.poison)} failFirst=${count((e) => !!e.payload.failFirst)} ` +
    `retryLater=${count((e) => e.payload.retryLaterMs !== undefined)} delayed=${count((e) => e.delayMs !== undefined)}`;
  const steps = plan.faults.map((f) => {
    const target = f.target === undefined ? '' : ` i${f.target}`;
    const duration = f.durationMs === undefined ? '' : ` ${f.durationMs}ms`;
    return `${(f.atMs / 1_000).toFixed(1)}s ${f.kind}${target}${duration}`;
  });
  return `seed=${plan.seed} ${workload} | ${steps.join(', ')}`;
}
