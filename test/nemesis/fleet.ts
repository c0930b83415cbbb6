// The processes of one nemesis run: a private redis-server with AOF (appendfsync always, so a
// kill -9 loses nothing Redis acknowledged: a loss the checker finds is the library's), the
// instances of the fleet, and the steps of the fault schedule applied to them.
import { type ChildProcess, fork } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { type HistoryWriter, type WorkloadOptions, nemesisPaths } from '../workers/nemesis-history.js';
import { FLEET_SIZE, type Fault } from './plan.js';

const require = createRequire(import.meta.url);
const { startRedis } = require('../../../scripts/lib/redis-process.cjs') as {
  startRedis(options: { appendonly: boolean; appendfsync: string }): Promise<RedisServer>;
};
const WORKER = join(dirname(fileURLToPath(import.meta.url)), '../../test-workers/nemesis-instance.worker.js');

export interface RedisServer {
  url: string;
  kill(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<RedisServer>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One instance process; `name` is its consumer name, kept across restarts (a pod keeps its name). */
class Instance {
  private exitedAt: Promise<void>;
  exited = false;
  stopped = false;

  constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    this.exitedAt = new Promise((resolve) =>
      child.once('exit', () => {
        this.exited = true;
        resolve();
      }),
    );
  }

  ready(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} not ready after ${timeoutMs} ms`)), timeoutMs);
      this.child.on('message', (m: { type: string; message?: string }) => {
        if (m.type === 'ready') resolve();
        if (m.type === 'error') reject(new Error(`${this.name}: ${m.message}`));
        if (m.type === 'ready' || m.type === 'error') clearTimeout(timer);
      });
      void this.exitedAt.then(() => reject(new Error(`${this.name} ended before it was ready`)));
    });
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.exited) this.child.kill(signal);
  }

  async end(signal: NodeJS.Signals, timeoutMs = 10_000): Promise<void> {
    if (this.stopped) this.signal('SIGCONT');
    this.signal(signal);
    const done = await Promise.race([this.exitedAt.then(() => true), sleep(timeoutMs).then(() => false)]);
    if (!done) {
      this.signal('SIGKILL');
      await this.exitedAt;
    }
  }
}

export class Fleet {
  readonly slots: Instance[] = [];
  private extra: Instance | null = null;
  admin!: Redis;
  redis!: RedisServer;

  constructor(
    private readonly dir: string,
    private readonly options: WorkloadOptions,
    private readonly history: HistoryWriter,
  ) {}

  async start(): Promise<void> {
    this.redis = await startRedis({ appendonly: true, appendfsync: 'always' });
    this.admin = new Redis(this.redis.url, { maxRetriesPerRequest: 20, retryStrategy: () => 100 });
    this.admin.on('error', () => undefined);
    const started = await Promise.all(Array.from({ length: FLEET_SIZE }, (_, i) => this.launch(`i${i}`)));
    this.slots.push(...started);
  }

  private async launch(name: string): Promise<Instance> {
    const logs = nemesisPaths(this.dir).logs;
    mkdirSync(logs, { recursive: true });
    const log = openSync(join(logs, `${name}.log`), 'a');
    const child = fork(WORKER, [], {
      env: {
        ...process.env,
        NEMESIS_DIR: this.dir,
        NEMESIS_OPTIONS: JSON.stringify(this.options),
        CONSUMER: name,
        DATA_URL: this.redis.url,
        LOGS: process.env.NEMESIS_LOGS ?? '0',
      },
      stdio: ['ignore', log, log, 'ipc'],
    });
    closeSync(log);
    const instance = new Instance(name, child);
    await instance.ready(60_000);
    return instance;
  }

  /** Applies one step of the schedule; resolves when it is over (a restarted instance is ready). */
  async apply(fault: Fault, operator: () => Promise<string>): Promise<void> {
    const slot = fault.target ?? 0;
    const note = (detail: string) => this.history.write({ kind: 'fault', detail: `${fault.kind} ${detail}`.trim() });
    const ended = (detail: string) => this.history.write({ kind: 'fault-end', detail: `${fault.kind} ${detail}`.trim() });
    switch (fault.kind) {
      case 'sigkill': {
        const victim = this.slots[slot];
        note(victim.name);
        await victim.end('SIGKILL');
        await sleep(fault.durationMs ?? 0);
        this.slots[slot] = await this.launch(victim.name);
        return ended(victim.name);
      }
      case 'sigstop': {
        const victim = this.slots[slot];
        note(victim.name);
        victim.signal('SIGSTOP');
        victim.stopped = true;
        await sleep(fault.durationMs ?? 0);
        victim.signal('SIGCONT');
        victim.stopped = false;
        return ended(victim.name);
      }
      case 'client-kill':
        note('');
        await this.admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes').catch(() => undefined);
        return;
      case 'client-pause':
        note(`${fault.durationMs}ms`);
        await this.admin.client('PAUSE', fault.durationMs ?? 100).catch(() => undefined);
        await sleep(fault.durationMs ?? 0);
        return ended('');
      case 'redis-restart':
        // A kill and a start on the same AOF folder (SHUTDOWN NOSAVE would be a clean stop).
        note('');
        await this.redis.kill('SIGKILL');
        await this.redis.start();
        return ended('');
      case 'deploy': {
        const old = this.slots[slot];
        note(old.name);
        await old.end('SIGTERM');
        this.slots[slot] = await this.launch(old.name);
        return ended(old.name);
      }
      case 'scale-up':
        if (this.extra) return;
        note(`i${FLEET_SIZE}`);
        this.extra = await this.launch(`i${FLEET_SIZE}`);
        return ended('');
      case 'scale-down':
        if (!this.extra) return;
        note(this.extra.name);
        await this.extra.end('SIGTERM');
        this.extra = null;
        return ended('');
      case 'redrive':
        note(await operator());
        return;
    }
  }

  /** Every base instance alive and running again (a schedule may end while one is stopped). */
  async heal(): Promise<void> {
    for (let i = 0; i < this.slots.length; i++) {
      const instance = this.slots[i];
      if (instance.stopped) instance.signal('SIGCONT');
      if (instance.exited) this.slots[i] = await this.launch(instance.name);
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.slots, ...(this.extra ? [this.extra] : [])].map((i) => i.end('SIGKILL')));
    this.admin?.disconnect();
    await this.redis?.stop().catch(() => undefined);
  }
}
