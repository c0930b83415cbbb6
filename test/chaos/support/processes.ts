import { type ChildProcess, fork } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { waitFor } from '../../support/helpers.js';

/** The chaos workers, compiled from test/workers into dist/test-workers by scripts/test.mjs. */
export type ChaosWorker =
  'chaos-consumer' | 'chaos-batch-consumer' | 'chaos-producer' | 'ownership-consumer' | 'db-orders' | 'db-payments';

export interface ChaosMessage {
  type: string;
  [key: string]: unknown;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

const WORKERS = join(__dirname, '../../../dist/test-workers');

/** One worker process; its stdout and stderr go to `<logDir>/<name>.log`. */
export class ChaosProcess {
  readonly messages: ChaosMessage[] = [];
  readonly exited: Promise<Exit>;
  exit: Exit | null = null;

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
  ) {
    child.on('message', (m) => this.messages.push(m as ChaosMessage));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      }),
    );
  }

  static spawn(worker: ChaosWorker, name: string, env: Record<string, string>, logDir: string): ChaosProcess {
    mkdirSync(logDir, { recursive: true });
    const log = openSync(join(logDir, `${name}.log`), 'a');
    const child = fork(join(WORKERS, `${worker}.worker.js`), [], {
      env: { ...process.env, ...env },
      stdio: ['ignore', log, log, 'ipc'],
    });
    closeSync(log); // the child holds its own descriptor
    return new ChaosProcess(name, child);
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /** Waits for a message; fails at once if the process ends first. */
  async waitFor(match: (m: ChaosMessage) => boolean, what: string, timeoutMs = 20_000): Promise<ChaosMessage> {
    return waitFor(
      () => {
        const found = this.messages.find(match);
        if (found) return found;
        const error = this.messages.find((m) => m.type === 'error');
        if (error || this.exit) throw new Error(`${this.name} ended (${JSON.stringify(this.exit)}) ${error?.message ?? ''}`);
        return undefined;
      },
      `${this.name}: ${what}`,
      timeoutMs,
    );
  }

  /** Waits for the process to end on its own; fails after `timeoutMs`. */
  async ended(timeoutMs = 20_000): Promise<Exit> {
    await waitFor(() => this.exit, `${this.name} to end`, timeoutMs);
    return this.exit!;
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    if (this.alive) this.child.kill(signal);
    return this.exited;
  }
}

/**
 * Restarts a process whenever it ends on its own, as an orchestrator would (same consumer name:
 * a pod keeps its name), until stopped.
 */
export class Supervisor {
  readonly exits: Exit[] = [];
  current: ChaosProcess | null = null;
  private stopped = false;
  private restarting: Promise<void> = Promise.resolve();

  constructor(private readonly start: () => Promise<ChaosProcess>) {}

  get restarts(): number {
    return this.exits.length;
  }

  async begin(): Promise<this> {
    await this.launch();
    return this;
  }

  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    this.stopped = true;
    await this.restarting;
    await this.current?.kill(signal);
  }

  private async launch(): Promise<void> {
    const proc = await this.start();
    this.current = proc;
    void proc.exited.then((exit) => {
      if (this.stopped) return;
      this.exits.push(exit);
      this.restarting = this.launch().catch(() => undefined);
    });
  }
}
