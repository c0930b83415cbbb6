// One seed of the nemesis harness: starts Redis and the fleet, produces the plan's events while
// the schedule's faults run, heals the fleet, lets the operator fix the poison events and re-drive
// every dead letter until everything settles, then hands the history and the final state to the
// checker.
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastValueFrom } from 'rxjs';
import { DeadLetterService, RedisStreamsClient, StreamRecord, partitionStream } from 'nest-redis-streams';
import {
  HistoryWriter,
  NEMESIS_GROUPS,
  type HistoryRecord,
  type WorkloadOptions,
  firstTime,
  nemesisPaths,
} from '../workers/nemesis-history.js';
import { type FinalState, type Park, type Violation, check } from './checker.js';
import { Fleet } from './fleet.js';
import { type Plan, makePlan } from './plan.js';

export interface SeedResult {
  plan: Plan;
  violations: Violation[];
  history: HistoryRecord[];
  dir: string;
  ms: number;
  /** Set when the run could not finish (the harness, not a promise). */
  error?: string;
}

const SETTLE_MS = 60_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readHistory(dir: string): HistoryRecord[] {
  const folder = nemesisPaths(dir).history;
  return readdirSync(folder).flatMap((file) =>
    readFileSync(join(folder, file), 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .flatMap((line) => {
        try {
          return [JSON.parse(line) as HistoryRecord];
        } catch {
          return []; // a line cut short by a SIGKILL in the middle of a write
        }
      }),
  );
}

/** The operator's tools over the run's dead-letter streams. */
function operatorOf(fleet: Fleet, options: WorkloadOptions, history: HistoryWriter) {
  const letters = () => new DeadLetterService(fleet.admin);
  const dlqs = Array.from({ length: options.partitions }, (_, p) =>
    DeadLetterService.streamFor(partitionStream(options.stream, p)),
  );
  const parked = async (): Promise<Array<Park & { dlq: string; id: string }>> => {
    const all = [];
    for (const dlq of dlqs) {
      for (const letter of (await letters().list(dlq, { count: 10_000 })).items)
        all.push({
          dlq,
          id: letter.id,
          group: letter.group,
          eventId: letter.fields.event_id,
          originalId: letter.originalId,
          reason: letter.reason,
          parkedAt: letter.parkedAt,
        });
    }
    return all;
  };
  /** Re-drives every dead letter to the group that parked it; says how many. */
  const redriveAll = async (): Promise<string> => {
    let count = 0;
    for (const letter of await parked()) {
      const id = await letters().redrive(letter.dlq, letter.id);
      if (id === null) continue;
      count++;
      history.write({
        kind: 'redriven',
        group: letter.group,
        eventId: letter.eventId,
        entryId: letter.originalId,
        reason: letter.reason,
        parkedAt: letter.parkedAt,
        detail: `as ${id}`,
      });
    }
    return `${count} letters`;
  };
  return { parked, redriveAll };
}

async function finalState(fleet: Fleet, options: WorkloadOptions, parked: () => Promise<Park[]>): Promise<FinalState> {
  const pending: Record<string, number> = {};
  for (const group of Object.values(NEMESIS_GROUPS)) {
    pending[group] = 0;
    for (let p = 0; p < options.partitions; p++) {
      const summary = (await fleet.admin.xpending(partitionStream(options.stream, p), group).catch(() => [0])) as [number];
      pending[group] += Number(summary[0]);
    }
  }
  const leftBlocked: string[] = [];
  for (const pattern of ['*nrs-blocked*', '*nrs-held*']) {
    for (const key of await fleet.admin.keys(pattern)) {
      const type = await fleet.admin.type(key);
      const size = type === 'hash' ? await fleet.admin.hlen(key) : type === 'stream' ? await fleet.admin.xlen(key) : 0;
      if (size > 0) leftBlocked.push(`${key}=${size}`);
    }
  }
  return { letters: await parked(), pending, leftBlocked };
}

export async function runSeed(seed: number): Promise<SeedResult> {
  const started = Date.now();
  const plan = makePlan(seed);
  const dir = mkdtempSync(join(tmpdir(), `nrs-nemesis-${seed}-`));
  const options: WorkloadOptions = { ...plan.options, stream: `nem-${seed}` };
  const history = new HistoryWriter(dir, 'runner');
  const fleet = new Fleet(dir, options, history);
  const result = (violations: Violation[], error?: string): SeedResult => ({
    plan,
    violations,
    history: readHistory(dir),
    dir,
    ms: Date.now() - started,
    error,
  });
  let client: RedisStreamsClient | undefined;
  try {
    await fleet.start();
    client = new RedisStreamsClient({ connection: fleet.redis.url, partitions: { [options.stream]: options.partitions } });
    const operator = operatorOf(fleet, options, history);
    const t0 = Date.now();

    const produce = async () => {
      for (const [n, event] of plan.events.entries()) {
        await sleep(Math.max(0, t0 + (n / plan.rate) * 1_000 - Date.now()));
        const record = new StreamRecord(event.payload, { eventId: event.eventId, partitionKey: event.payload.key });
        for (;;) {
          try {
            const [seconds, micros] = await fleet.admin.time();
            const due =
              event.delayMs === undefined
                ? undefined
                : Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000) + event.delayMs;
            await lastValueFrom(
              client!.emit(options.stream, record, event.delayMs === undefined ? undefined : { delayMs: event.delayMs }),
            );
            history.write({
              kind: 'produced',
              eventId: event.eventId,
              key: event.payload.key,
              seq: event.payload.seq,
              dueMs: due,
            });
            break;
          } catch {
            await sleep(100); // Redis restarting or paused: the same event id again (a copy at worst)
          }
        }
      }
    };
    const nemesis = async () => {
      for (const fault of plan.faults) {
        await sleep(Math.max(0, t0 + fault.atMs - Date.now()));
        await fleet.apply(fault, operator.redriveAll);
      }
    };
    await Promise.all([produce(), nemesis()]);
    await fleet.heal();

    // The operator fixes every poison event and re-drives what is parked until all is settled.
    for (const event of plan.events) if (event.payload.poison) firstTime(nemesisPaths(dir).fixed(event.eventId));
    const deadline = Date.now() + SETTLE_MS;
    const groups = Object.values(NEMESIS_GROUPS);
    for (;;) {
      await operator.redriveAll();
      const records = readHistory(dir);
      const finished = new Set(records.filter((r) => r.kind === 'finish').map((r) => `${r.group}|${r.eventId}`));
      const produced = records.filter((r) => r.kind === 'produced');
      const state = await finalState(fleet, options, operator.parked);
      const done = produced.every((p) => groups.every((g) => finished.has(`${g}|${p.eventId}`)));
      const quiet = groups.every((g) => state.pending[g] === 0) && state.leftBlocked.length === 0;
      if ((done && quiet) || Date.now() > deadline) {
        return result(check(readHistory(dir), state, options.maxDeliveries));
      }
      await sleep(1_000);
    }
  } catch (err) {
    return result([], (err as Error).stack ?? String(err));
  } finally {
    await client?.close().catch(() => undefined);
    await fleet.close();
  }
}

/** Removes a passing run's folder (a failing one is kept as evidence). */
export function removeRun(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
}
