import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type Browser, chromium } from 'playwright-core';
import { metricNamesIn } from '../ops/promql-names.js';
import { fieldsToObject, waitFor } from '../support/helpers.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startRedis, freePort } = require('../../scripts/lib/redis-process.cjs');

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const DEMO = join(__dirname, '../../dist/apps/orders-demo/main.js');
// The README's screenshots: refreshed with NRS_SCREENSHOTS=1 (docs/console); other runs write to a temp dir.
const SHOTS = process.env.NRS_SCREENSHOTS === '1' ? join(__dirname, '../../docs/console') : join(tmpdir(), 'nrs-demo-shots');
/** The charts' sampling period in the demo under test: a few samples within the test. */
const SAMPLE_MS = 1_000;

/**
 * The console as the demo mounts it (`npm run demo -- --serve`), driven in headless Chromium: the
 * demo's own app, groups and payments handler, against its own Redis.
 */
describe('the streams console mounted in the orders demo', () => {
  let server: { url: string; stop(): Promise<void> };
  let redis: Redis;
  let app: ChildProcess;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (or set CHROMIUM_PATH).`);
    if (!existsSync(DEMO)) throw new Error(`${DEMO} is missing: build the demo first (npm test does).`);
    server = await startRedis({ appendonly: false });
    redis = new Redis(server.url);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = spawn(process.execPath, [DEMO], {
      env: {
        ...process.env,
        REDIS_URL: server.url,
        PORT: String(port),
        CONSUMER_NAME: 'console-demo-1',
        CONSOLE_HISTORY_SAMPLE_MS: String(SAMPLE_MS),
      },
      stdio: 'ignore',
    });
    // The demo starts Nest, PGlite and its migrations: more than 30 s on a busy machine (load 15, 2 cores).
    await waitFor(async () => (await fetch(`${base}/health/live`)).ok, 'the demo to be live', 90_000);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    mkdirSync(SHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (app && app.exitCode === null) {
      const exited = new Promise((r) => app.once('exit', r));
      app.kill('SIGTERM');
      await exited;
    }
    redis?.disconnect();
    await server?.stop();
  }, 30_000); // the demo process and the browser end

  it("shows the demo's groups, and a dead letter re-driven by a click is run again by the demo's payments handler", async () => {
    const post = (order: object) =>
      fetch(`${base}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(order) });
    for (let i = 0; i < 4; i++) {
      const res = await post({
        orderId: `c-${i}`,
        customerId: 'c',
        amount: i === 2 ? -5 : 10 + i,
        items: [{ sku: 'a', quantity: 1 }],
      });
      expect(res.status).toBe(202);
    }
    // Payments parks the order with a negative amount (NonRetryableError) on its first delivery.
    const [[parkedId, parkedFields]] = await waitFor(async () => {
      const letters = await redis.xrange('orders:dlq', '-', '+');
      return letters.length === 1 ? letters : null;
    }, 'the negative order to be parked by payments');
    expect(fieldsToObject(parkedFields)['dlq:group']).toBe('payments');

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    page.on('dialog', (dialog) => void dialog.accept());
    await page.goto(`${base}/streams-console`);
    await page.waitForSelector('[data-test=overview] table');
    const overview = await page.textContent('[data-test=overview]');
    for (const group of ['payments', 'inventory', 'notifications']) expect(overview).toContain(group);

    await page.goto(`${base}/streams-console#dead-letters?${new URLSearchParams({ stream: 'orders' })}`);
    await page.waitForSelector('[data-test=redrive]');
    await page.click('[data-test=redrive]');

    // In Redis: the dead letter left, the payments handler ran the re-driven entry (and, the
    // amount being negative still, parked it again under a new id), and no group holds it pending.
    const [[againId, againFields]] = await waitFor(async () => {
      const letters = await redis.xrange('orders:dlq', '-', '+');
      return letters.length === 1 && letters[0][0] !== parkedId ? letters : null;
    }, 'payments to run the re-driven order and park it again');
    const again = fieldsToObject(againFields);
    expect(again['dlq:group']).toBe('payments');
    expect(again['dlq:reason']).toBe('non-retryable');
    expect(again['dlq:id']).not.toBe(fieldsToObject(parkedFields)['dlq:id']);
    expect(againId > parkedId).toBe(true);
    for (const group of ['payments', 'inventory', 'notifications']) {
      await waitFor(
        async () => Number(((await redis.xpending('orders', group)) as [number])[0]) === 0,
        `${group} to have nothing pending`,
      );
    }
    const audit = await page.evaluate(async () => (await fetch(`${location.pathname}/api/audit`)).json());
    expect(JSON.stringify(audit)).toContain('demo');
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000); // a browser against the spawned demo; its waits alone are bounded at 15 s each

  it('takes the README screenshots from the demo: overview with sparklines, group with its chart, dead letters, audit', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(err.message));
    // Orders over a few sampling periods, so the charts have a history to draw.
    let n = 0;
    await waitFor(
      async () => {
        const res = await fetch(`${base}/orders`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ orderId: `s-${n++}`, customerId: 'shots', amount: 10 + n, items: [{ sku: 'a', quantity: 1 }] }),
        });
        expect(res.status).toBe(202);
        await page.goto(`${base}/streams-console`);
        await page.waitForSelector('[data-test=overview] table');
        if ((await page.locator('svg[data-test=spark]').count()) !== 3) return false;
        const points = await page.$eval(
          'svg[data-test=spark] polyline',
          (el) => (el.getAttribute('points') ?? '').split(' ').length,
        );
        return points >= 6;
      },
      'a sparkline of six samples for each of the three groups',
      45_000,
    );
    await page.screenshot({ path: join(SHOTS, 'overview.png'), fullPage: true });

    await page.goto(`${base}/streams-console#group?${new URLSearchParams({ stream: 'orders', group: 'payments' })}`);
    await page.waitForSelector('svg[data-test=rate-chart]');
    await page.screenshot({ path: join(SHOTS, 'group.png'), fullPage: true });
    await page.locator('svg[data-test=chart]').screenshot({ path: join(SHOTS, 'chart.png') });

    await page.goto(`${base}/streams-console#dead-letters?${new URLSearchParams({ stream: 'orders' })}`);
    await page.waitForSelector('[data-test=dead-letters] table');
    await page.screenshot({ path: join(SHOTS, 'dead-letters.png'), fullPage: true });

    await page.goto(`${base}/streams-console#audit`);
    await page.waitForSelector('[data-test=audit] table');
    await page.screenshot({ path: join(SHOTS, 'audit.png'), fullPage: true });
    for (const shot of ['overview', 'group', 'chart', 'dead-letters', 'audit'])
      expect(existsSync(join(SHOTS, `${shot}.png`))).toBe(true);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);

  it('registers every metric the Grafana dashboard queries (server, client, outbox relay), so that no panel of the demo is empty', async () => {
    const dashboard = JSON.parse(readFileSync(join(__dirname, '../../deploy/grafana/dashboards/redis-streams.json'), 'utf8')) as {
      panels: Array<{ targets: Array<{ expr: string }> }>;
    };
    const queried = new Set(dashboard.panels.flatMap((p) => p.targets.flatMap((t) => metricNamesIn(t.expr))));
    // Memory comes from the Redis exporter, not the app; a histogram's series share its TYPE line.
    const fromApp = [
      ...new Set([...queried].filter((n) => n.startsWith('redis_streams_')).map((n) => n.replace(/_(bucket|sum|count)$/, ''))),
    ];
    expect(fromApp.length).toBeGreaterThan(10);
    const text = await (await fetch(`${base}/metrics`)).text();
    const registered = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    expect(fromApp.filter((name) => !registered.has(name))).toEqual([]);
  });
});
