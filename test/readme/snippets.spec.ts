import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { redisUrl, testContext, unique, waitFor } from '../support/helpers.js';
import { buildApp, type BuiltApp, readmeSnippets } from './readme-app.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { freePort } = require('../../scripts/lib/redis-process.cjs');

// Five full rounds of handlers, so a slow probe or start-up still leaves a full round to interrupt.
const ENTRIES = 40;
const CONCURRENCY = 8;
const HANDLER_MS = 500;
const REPORT_PREFIX = 'readme-app ';

/** What the test adds around the README's snippets: the slow handler, and the module of the standalone app. */
const FIXTURES: Array<[string, string]> = [
  ['slow-handler.ts', readFileSync(join(__dirname, 'app/slow-handler.ts'), 'utf8')],
  [
    'standalone/app.module.ts',
    [
      "import { Module } from '@nestjs/common';",
      "import { SlowHandler } from '../slow-handler.js';",
      '@Module({ controllers: [SlowHandler] })',
      'export class AppModule {}',
    ].join('\n'),
  ],
  // The direct handlers' main.ts mounts the same module as the standalone one.
  ['direct/app.module.ts', "export { AppModule } from '../standalone/app.module.js';\n"],
  // The README's module lists `BillingHandler`: here it is the slow handler.
  ['hybrid/billing.handler.ts', "export { SlowHandler as BillingHandler } from '../slow-handler.js';\n"],
];

/** A README app running as a child process; its handlers report on stdout. */
class AppProcess {
  readonly started: string[] = [];
  readonly done: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private output = '';
  private constructor(private readonly child: ChildProcess) {
    let partial = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.output += chunk;
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (!line.startsWith(REPORT_PREFIX)) continue;
        const { event, id } = JSON.parse(line.slice(REPORT_PREFIX.length)) as { event: string; id: string };
        (event === 'start' ? this.started : this.done).push(id);
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.output += chunk));
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  static start(script: string, env: Record<string, string>): AppProcess {
    return new AppProcess(
      spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }),
    );
  }

  get running(): number {
    return this.started.length - this.done.length;
  }

  /** Everything the app printed, for failure messages. */
  get log(): string {
    return this.output.slice(-4000);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(signal);
  }

  async waitForExit(what: string, timeoutMs: number) {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`The ${what} app did not exit within ${timeoutMs} ms. Its output:\n${this.log}`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

describe('README and guide snippets, run as written', () => {
  const { redis, closers } = testContext();
  let built: BuiltApp;

  beforeAll(() => {
    const snippets = readmeSnippets();
    // The apps this test runs, and the console module and inbox/outbox code: compiled with their
    // `nest-redis-streams/console` and `nest-redis-streams/database` imports.
    for (const needed of [
      'standalone/main.ts',
      'hybrid/main.ts',
      'hybrid/app.module.ts',
      'hybrid/health.controller.ts',
      'console/ops.module.ts',
      'exactly-once/orders.ts',
    ]) {
      if (!snippets.has(needed))
        throw new Error(`Neither the README nor a guide marks a code block <!-- snippet: ${needed} -->; this test needs it.`);
    }
    built = buildApp(new Map([...snippets, ...FIXTURES]));
  }, 60_000);
  afterAll(() => built?.remove());

  async function addEntries(stream: string): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < ENTRIES; i++) ids.push((await redis.xadd(stream, '*', 'orderId', `o-${i}`))!);
    return ids;
  }

  function startApp(
    kind: 'standalone' | 'hybrid',
    stream: string,
    group: string,
    extraEnv: Record<string, string> = {},
  ): AppProcess {
    const app = AppProcess.start(built.entry(`${kind}/main.ts`), {
      REDIS_URL: redisUrl(),
      CONSUMER_NAME: `readme-${kind}-1`,
      STREAM: stream,
      GROUP: group,
      CONCURRENCY: String(CONCURRENCY),
      HANDLER_MS: String(HANDLER_MS),
      ...extraEnv,
    });
    closers.push(async () => {
      app.signal('SIGKILL');
      await app.exited;
    });
    return app;
  }

  /**
   * SIGTERM while a full set of handlers runs; then the process must end by itself, every handler
   * it started must have finished, and every entry must be accounted for: handled and acked,
   * handed back (still pending), or never delivered (after the group's last-delivered id).
   */
  async function terminateAndCheck(app: AppProcess, kind: string, stream: string, group: string, ids: string[]) {
    await waitFor(
      () => app.running === CONCURRENCY,
      `${CONCURRENCY} handlers of the ${kind} app to be running (output:\n${app.log})`,
    );
    const runningAtSignal = app.started.filter((id) => !app.done.includes(id));
    app.signal('SIGTERM');
    const exit = await app.waitForExit(kind, 10_000);

    // Nest's shutdown hooks re-raise the signal once the app has closed (or exit 0 with useProcessExit).
    expect([
      { code: null, signal: 'SIGTERM' },
      { code: 0, signal: null },
    ]).toContainEqual(exit);
    expect(runningAtSignal).toHaveLength(CONCURRENCY);
    expect(app.done.filter((id) => runningAtSignal.includes(id)).sort()).toEqual([...runningAtSignal].sort());
    expect([...app.done].sort()).toEqual([...app.started].sort());
    expect(new Set(app.started).size).toBe(app.started.length);

    const pending = ((await redis.xpending(stream, group, '-', '+', ENTRIES)) as Array<[string, ...unknown[]]>).map(([id]) => id);
    const groups = (await redis.xinfo('GROUPS', stream)) as unknown[][];
    const info = groups
      .map((fields) => Object.fromEntries(fields.flatMap((v, i) => (i % 2 ? [] : [[v, fields[i + 1]]]))))
      .find((g) => g.name === group)!;
    const undelivered = (await redis.xrange(stream, `(${info['last-delivered-id']}`, '+')).map(([id]) => id);
    const handled = app.done;
    expect(handled.filter((id) => pending.includes(id))).toEqual([]); // handled ⇒ acked
    expect([...handled, ...pending, ...undelivered].sort()).toEqual([...ids].sort()); // none lost, none counted twice
  }

  it('standalone main.ts: SIGTERM lets running handlers finish and ack before the process ends', async () => {
    const stream = unique('readme-standalone');
    const group = 'billing';
    const ids = await addEntries(stream);
    const app = startApp('standalone', stream, group);
    await terminateAndCheck(app, 'standalone', stream, group, ids);
  }, 30_000);

  it('hybrid main.ts with the health module: probes answer, and SIGTERM drains like the standalone app', async () => {
    const stream = unique('readme-hybrid');
    const group = 'billing';
    const ids = await addEntries(stream);
    const port = String(await freePort());
    const app = startApp('hybrid', stream, group, { PORT: port });
    const base = `http://127.0.0.1:${port}`;
    await waitFor(() => app.running > 0, `the hybrid app to run handlers (output:\n${app.log})`);

    const live = await fetch(`${base}/health/live`);
    expect(live.status).toBe(200);
    const ready = await fetch(`${base}/health/ready`);
    const readyBody = await ready.text();
    expect(ready.status).toBe(200);
    // The indicator checks the mounted transport: it reports this app's stream and group.
    expect(readyBody).toContain(stream);
    expect(readyBody).toContain(group);

    await terminateAndCheck(app, 'hybrid', stream, group, ids);
  }, 30_000);
});
