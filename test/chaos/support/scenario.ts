import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { seededRandom } from '../../workers/chaos-hostile.js';
import { ledgerKeys } from '../../workers/chaos-ledger.js';
import { waitFor } from '../../support/helpers.js';
import { type Reconciliation, isSettled, reconcile } from './ledger.js';
import { ChaosProcess, type ChaosWorker } from './processes.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startRedis } = require('../../../scripts/lib/redis-process.cjs') as {
  startRedis(options: { appendonly?: boolean; appendfsync?: string }): Promise<RedisServer>;
};

/** A private redis-server (scripts/lib/redis-process.cjs). */
export interface RedisServer {
  url: string;
  port: number;
  kill(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<RedisServer>;
  stop(): Promise<void>;
}

/** One row of the chaos table (see global-teardown.cjs). */
export interface ChaosRow {
  n: number;
  sub: string;
  scenario: string;
  size: string;
  produced: number;
  processed: number;
  lost: number;
  duplicates: number;
  dupEffects: number;
  deadLettered: number;
  tombstoned: number;
  wallMs: number;
  notes: string;
  passed: boolean;
}

/** Sizes scale with CHAOS_SCALE (default 1: scenario 1 runs the 20,000 entries). */
export const scaled = (n: number) => Math.max(1, Math.round(n * Number(process.env.CHAOS_SCALE ?? 1)));

const open = new Set<Scenario>();

/**
 * One scenario run: a fresh data redis-server (the one that gets killed), unique ledger keys and
 * stream, its worker processes, and a seeded random source for the chaos schedule.
 */
export class Scenario {
  readonly run: string;
  readonly stream: string;
  readonly keys: ReturnType<typeof ledgerKeys>;
  readonly seed = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
  readonly random = seededRandom(this.seed);
  readonly started = Date.now();
  readonly logDir: string;
  server!: RedisServer;
  /** Admin connection to the data Redis; retries through restarts. */
  data!: Redis;
  ledger!: Redis;
  readonly processes = new Set<ChaosProcess>();
  notes: string[] = [];

  private constructor(
    readonly n: number,
    readonly sub: string,
    readonly title: string,
  ) {
    this.run = `c${n}${sub}-${this.started.toString(36)}`;
    this.stream = `chaos:${this.run}:events`;
    this.keys = ledgerKeys(this.run);
    this.logDir = join(tmpdir(), 'nrs-chaos-logs', this.run);
  }

  static async open(
    n: number,
    sub: string,
    title: string,
    redis: { appendfsync?: 'always' | 'everysec' } = {},
  ): Promise<Scenario> {
    const s = new Scenario(n, sub, title);
    open.add(s);
    s.server = await startRedis({ appendonly: true, appendfsync: redis.appendfsync ?? 'everysec' });
    s.data = new Redis(s.server.url, { maxRetriesPerRequest: 3 });
    s.data.on('error', () => undefined);
    s.ledger = new Redis(process.env.CHAOS_LEDGER_URL!, { maxRetriesPerRequest: 3 });
    return s;
  }

  get dlq(): string {
    return `${this.stream}:dlq`;
  }

  /** Starts a worker process with this scenario's connection settings. */
  spawn(worker: ChaosWorker, name: string, env: Record<string, string | number> = {}): ChaosProcess {
    const base = { DATA_URL: this.server.url, LEDGER_URL: process.env.CHAOS_LEDGER_URL!, RUN: this.run, STREAM: this.stream };
    const all = Object.fromEntries(
      Object.entries({ ...base, CONSUMER: name, LOGS: process.env.CHAOS_LOGS ?? '0', ...env }).map(([k, v]) => [k, String(v)]),
    );
    const proc = ChaosProcess.spawn(worker, name, all, this.logDir);
    this.processes.add(proc);
    return proc;
  }

  /** A consumer process, once it listens. */
  async consumer(name: string, env: Record<string, string | number> = {}): Promise<ChaosProcess> {
    const proc = this.spawn('chaos-consumer', name, env);
    await proc.waitFor((m) => m.type === 'ready', 'ready');
    return proc;
  }

  /** Several consumer processes started together (start-up is CPU-bound: parallel is faster). */
  consumers(names: string[], env: Record<string, string | number> = {}): Promise<ChaosProcess[]> {
    return Promise.all(names.map((name) => this.consumer(name, env)));
  }

  /** Starts a producer; await `produced()` for its result. */
  producer(name: string, env: Record<string, string | number>): ChaosProcess {
    return this.spawn('chaos-producer', name, env);
  }

  /** Waits for a producer to finish; resolves with how many events it wrote and retried. */
  async produced(producer: ChaosProcess, timeoutMs = 60_000): Promise<{ produced: number; retries: number }> {
    const done = await producer.waitFor((m) => m.type === 'done', 'all events produced', timeoutMs);
    return { produced: Number(done.produced), retries: Number(done.retries) };
  }

  reconcile(groups = ['nest']): Promise<Reconciliation> {
    return reconcile(this.ledger, this.data, this.run, this.stream, groups);
  }

  /**
   * Polls the ledger until every produced event has an outcome in every group and nothing is
   * pending (or `until` holds); resolves with the last reconciliation even on timeout, so the
   * test reports what is missing instead of a bare timeout.
   */
  async settle(
    groups = ['nest'],
    timeoutMs = 60_000,
    until: (r: Reconciliation) => boolean = isSettled,
  ): Promise<Reconciliation> {
    let last = await this.reconcile(groups);
    await waitFor(async () => until((last = await this.reconcile(groups))), 'the ledger to settle', timeoutMs).catch(
      () => undefined,
    );
    return last;
  }

  /** Transport event counters summed over every process of the run. */
  async stats(): Promise<Record<string, number>> {
    const raw = await this.ledger.hgetall(this.keys.stats);
    return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, Number(v)]));
  }

  /** Largest resident set size of each worker process label, in MB. */
  async peakRssMb(): Promise<number[]> {
    return Object.values(await this.ledger.hgetall(this.keys.rss)).map((bytes) => Math.round(Number(bytes) / 1024 / 1024));
  }

  note(text: string): void {
    this.notes.push(text);
  }

  /** A table row from a reconciliation (totals over its groups). */
  row(size: string, r: Reconciliation): ChaosRow {
    const sum = (pick: (g: Reconciliation['groups'][number]) => number) => r.groups.reduce((t, g) => t + pick(g), 0);
    return {
      n: this.n,
      sub: this.sub,
      scenario: this.title,
      size,
      passed: false,
      produced: r.produced.size,
      processed: sum((g) => g.processed),
      lost: sum((g) => Math.max(0, g.missing.length - g.auditedLoss)),
      duplicates: sum((g) => g.duplicates),
      dupEffects: sum((g) => g.dupEffects),
      deadLettered: sum((g) => g.deadLettered),
      tombstoned: sum((g) => g.tombstoned + g.auditedLoss),
      wallMs: Date.now() - this.started,
      notes: [`seed ${this.seed}`, ...this.notes].join('; '),
    };
  }

  /** Ends every process and server of the run; logs are kept only when the run failed. */
  async close(keepLogs: boolean): Promise<void> {
    open.delete(this);
    await Promise.all([...this.processes].map((p) => p.kill('SIGKILL')));
    // A failed run keeps the evidence that dies with the data Redis: the dead-letter stream.
    if (keepLogs) {
      const dlq = await this.data.xrange(this.dlq, '-', '+', 'COUNT', 200).catch((err: Error) => err.message);
      mkdirSync(this.logDir, { recursive: true });
      writeFileSync(
        join(this.logDir, 'dead-letters.json'),
        JSON.stringify(dlq, (_, v) => (typeof v === 'string' && v.length > 500 ? `${v.slice(0, 500)}...` : v), 1),
      );
    }
    this.data?.disconnect();
    await this.ledger?.quit().catch(() => undefined);
    await this.server?.stop().catch(() => undefined);
    if (!keepLogs && process.env.CHAOS_KEEP_LOGS !== '1') rmSync(this.logDir, { recursive: true, force: true });
  }
}

/** For afterAll: whatever a timed-out test left running. */
export async function closeOpenScenarios(): Promise<void> {
  await Promise.all([...open].map((s) => s.close(true)));
}
