// Parent side of a benchmark child: fork with IPC, wait for its messages, read its memory.
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

type Message = { type: string; [key: string]: unknown };

/** Folder of the compiled children (dist/bench/children). */
const CHILDREN = new URL('../children/', import.meta.url);

export class BenchChild {
  private readonly inbox: Message[] = [];
  private waiter: (() => void) | null = null;
  private exitError: Error | null = null;

  private constructor(
    private readonly child: ChildProcess,
    readonly name: string,
  ) {
    child.on('message', (message: Message) => {
      this.inbox.push(message);
      this.waiter?.();
    });
    child.on('exit', (code, signal) => {
      this.exitError = new Error(`Benchmark child ${name} exited (code ${code}, signal ${signal}).`);
      this.waiter?.();
    });
  }

  /** Forks `children/<name>.js` and waits for its `ready` message. */
  static async start(name: string, env: Record<string, string | number>, execArgv: string[] = []): Promise<BenchChild> {
    const script = fileURLToPath(new URL(`${name}.js`, CHILDREN));
    const vars = Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)]));
    const child = fork(script, [], {
      env: { ...process.env, ...vars },
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const bench = new BenchChild(child, name);
    await bench.next('ready', 30_000);
    return bench;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The next message of `type` (earlier messages of other types are dropped). */
  async next<T extends Message>(type: string, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const index = this.inbox.findIndex((m) => m.type === type);
      if (index >= 0) return this.inbox.splice(0, index + 1).pop() as T;
      if (this.exitError) throw this.exitError;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`Benchmark child ${this.name} sent no "${type}" within ${timeoutMs} ms.`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiter = null;
    }
  }

  /** A memory figure of the child in MiB from /proc: VmRSS (now) or VmHWM (peak since reset). */
  memoryMiB(field: 'VmRSS' | 'VmHWM'): number {
    const status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
    return kb / 1024;
  }

  /**
   * Resets VmHWM to the current RSS (Linux clear_refs "5"), so the next peak excludes start-up.
   * False where the kernel does not allow it; then only sampled RSS tells the peak.
   */
  resetPeak(): boolean {
    try {
      writeFileSync(`/proc/${this.pid}/clear_refs`, '5');
      return true;
    } catch {
      return false;
    }
  }

  /** Asks the child to exit (so profiles get written); kills it if it does not within 5 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.send({ type: 'stop' });
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
