import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from '../support/helpers.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startRedis, freePort } = require('../../scripts/lib/redis-process.cjs');

/** The demo app as users run it: compiled, in its own process, against its own Redis and embedded PGlite. */
describe('orders demo app over HTTP', () => {
  let redis: { url: string; stop(): Promise<void> };
  let app: ChildProcess;
  let base: string;

  beforeAll(async () => {
    redis = await startRedis({ appendonly: false });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    app = spawn(process.execPath, [join(__dirname, '../../dist/apps/orders-demo/main.js')], {
      env: { ...process.env, REDIS_URL: redis.url, PORT: String(port), CONSUMER_NAME: 'demo-test-1' },
      stdio: 'ignore',
    });
    // The demo starts Nest, PGlite and its migrations: more than 30 s on a busy machine (load 15, 2 cores).
    await waitFor(async () => (await fetch(`${base}/health/live`)).ok, 'the demo to be live', 90_000);
  }, 120_000);

  afterAll(async () => {
    if (app && app.exitCode === null) {
      const exited = new Promise((r) => app.once('exit', r));
      app.kill('SIGTERM');
      await exited;
    }
    await redis?.stop();
  }, 30_000); // the demo drains and exits, then redis-server

  const post = (order: object) =>
    fetch(`${base}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(order) });

  it('stores orders with their outbox events, charges each once through the inbox, processes them in three groups, reconciles, and reports health and metrics', async () => {
    for (let i = 0; i < 20; i++) {
      const res = await post({
        orderId: `t-${i}`,
        customerId: 'c',
        amount: i === 7 ? -1 : 10 + i,
        items: [{ sku: 'a', quantity: 1 }],
      });
      expect(res.status).toBe(202);
    }
    expect((await post({ orderId: 'bad' })).status).toBe(400);
    // A client retry: the order is stored already, so no second event enters the outbox.
    const retry = await post({ orderId: 't-3', customerId: 'c', amount: 13, items: [] });
    expect(await retry.json()).toEqual({ orderId: 't-3', eventId: 'order-t-3', stored: false });

    const metricValue = (text: string, group: string, name: string) =>
      Number(new RegExp(`^redis_streams_${name}\\{stream="orders",group="${group}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
    const metrics = await waitFor(
      async () => {
        const text = await (await fetch(`${base}/metrics`)).text();
        const ok =
          ['inventory', 'notifications'].every((g) => metricValue(text, g, 'entries_acked_total') === 20) &&
          metricValue(text, 'payments', 'entries_acked_total') === 19;
        return ok ? text : null;
      },
      'every group to ack its entries',
      60_000,
    );
    expect(metricValue(metrics, 'payments', 'entries_dead_lettered_total')).toBe(1);

    // The figures come from the database: each order stored once, charged once or dead-lettered.
    expect(await (await fetch(`${base}/orders/summary`)).json()).toEqual({
      orders: 20,
      outboxUnsent: 0,
      charges: 19,
      chargedOrders: 19,
      duplicatesPrevented: 0,
    });
    expect(await (await fetch(`${base}/orders/reconcile`)).json()).toEqual({
      expected: 20,
      appliedOnce: 19,
      missing: [],
      duplicated: [],
      deadLettered: ['order-t-7'],
    });

    const live = await fetch(`${base}/health/live`);
    expect(live.status).toBe(200);
    const ready = await (await fetch(`${base}/health/ready`)).json();
    expect(ready.status).toBe('degraded');
    expect(JSON.stringify(ready)).toContain('dead-letter stream \\"orders:dlq\\" is 1');

    const table = await (await fetch(`${base}/streams`)).text();
    expect(table).toMatch(/orders\s+payments\s+0\s/);
    expect(table).toMatch(/orders\s+inventory\s+0\s/);
  }, 120_000);
});
