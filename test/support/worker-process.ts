import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from './helpers.js';

export interface WorkerMessage {
  type: string;
  id?: string;
  deliveries?: number;
  [key: string]: unknown;
}

/** A consumer process started from dist/test-workers (built by `npm test` before Jest runs). */
export class WorkerProcess {
  readonly messages: WorkerMessage[] = [];
  readonly exited: Promise<number | null>;
  private constructor(readonly child: ChildProcess) {
    child.on('message', (m) => this.messages.push(m as WorkerMessage));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  static async start(env: Record<string, string>, waitReady = true): Promise<WorkerProcess> {
    const script = join(__dirname, '../../dist/test-workers/consumer.worker.js');
    const child = fork(script, [], { env: { ...process.env, ...env }, stdio: 'ignore' });
    const worker = new WorkerProcess(child);
    if (waitReady) await worker.waitFor((m) => m.type === 'ready', 'the worker to be ready');
    return worker;
  }

  waitFor(match: (m: WorkerMessage) => boolean, what: string, timeoutMs = 15_000): Promise<WorkerMessage> {
    return waitFor(() => this.messages.find(match), what, timeoutMs);
  }

  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
    await this.exited;
  }
}
