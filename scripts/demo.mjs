#!/usr/bin/env node
// `npm run demo`: builds the library and the orders demo, starts Redis (a private redis-server
// unless REDIS_URL is set), runs the hybrid app (embedded PGlite unless DATABASE_URL is set),
// posts a burst of orders over HTTP (each stored with its outbox event in one transaction) and
// shows each consumer group working through them: retries, dead letters, the inbox absorbing a
// re-published order, health, metrics, and the database's reconciliation at the end.
// `npm run demo -- --serve` keeps the app running afterwards.
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';

const require = createRequire(import.meta.url);
const { startRedis, freePort } = require('./lib/redis-process.cjs');

const root = join(import.meta.dirname, '..');
const serve = process.argv.includes('--serve');
const ORDERS = 300;
const INVALID = [17, 101, 233]; // non-positive amounts: parked in the dead-letter stream at once
const FLAKY = [5, 55, 155, 255]; // the payment provider fails twice, then accepts

const bold = (s) => `\x1b[1m${s}\x1b[0m`;
const step = (s) => console.log(`\n${bold(`▶ ${s}`)}`);

async function main() {
  step('Building the library and the demo app');
  for (const project of ['libs/nest-redis-streams/tsconfig.build.json', 'apps/orders-demo/tsconfig.app.json']) {
    const built = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', project], {
      cwd: root,
      stdio: 'inherit',
    });
    if (built.status !== 0) throw new Error(`Build of ${project} failed.`);
  }

  let redisProcess = null;
  let redisUrl = process.env.REDIS_URL;
  if (redisUrl) {
    step(`Using Redis at ${redisUrl}`);
  } else {
    step('Starting a private redis-server (AOF on)');
    redisProcess = await startRedis({ appendonly: true, log: (m) => console.log(m) });
    redisUrl = redisProcess.url;
    console.log(`redis-server on ${redisUrl}, data in ${redisProcess.dir}`);
  }

  const port = Number(process.env.PORT ?? (await freePort()));
  const base = `http://127.0.0.1:${port}`;
  mkdirSync(join(root, 'reports'), { recursive: true });
  const logPath = join(root, 'reports', 'demo-app.log');
  step(`Starting the hybrid app (HTTP ${base}; full log in reports/demo-app.log)`);
  const app = spawn(process.execPath, [join(root, 'dist/apps/orders-demo/main.js')], {
    cwd: root,
    env: { ...process.env, REDIS_URL: redisUrl, PORT: String(port), CONSUMER_NAME: 'orders-demo-1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const log = createWriteStream(logPath);
  const exited = new Promise((resolve) => app.once('exit', resolve));
  for (const stream of [app.stdout, app.stderr]) {
    stream.pipe(log, { end: false });
    // Show the transport's warnings (retries, dead letters) as they happen; the rest stays in the file.
    stream.on('data', (chunk) => {
      for (const line of chunk.toString().split('\n')) {
        if (/WARN|ERROR/.test(line) && !/RpcExceptionsHandler/.test(line))
          console.log(`  app | ${line.replace(/\x1b\[[0-9;]*m/g, '').replace(/^.*?(WARN|ERROR)/, '$1')}`);
      }
    });
  }

  const redis = new Redis(redisUrl);
  try {
    await waitUntil(async () => (await fetch(`${base}/health/live`).catch(() => null))?.ok, 'the app to be live', 30_000, exited);

    step(`Publishing ${ORDERS} orders over HTTP (POST /orders), 20 at a time`);
    const started = performance.now();
    for (let i = 0; i < ORDERS; i += 20) {
      await Promise.all(Array.from({ length: Math.min(20, ORDERS - i) }, (_, k) => postOrder(base, i + k)));
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `${ORDERS} orders stored with their outbox events in ${seconds.toFixed(2)} s (${Math.round(ORDERS / seconds)} orders/s over HTTP).`,
    );
    await postOrder(base, 42); // the client retries a POST: the order is stored already
    console.log('Order 42 posted a second time (a client retry): the orders table keeps one, the outbox one event.');
    // What a relay killed between XADD and marking the row sent does: the same event id again.
    const { RedisStreamsClient, StreamRecord } = await import('nest-redis-streams');
    const client = new RedisStreamsClient({ connection: redisUrl });
    await lastValueFrom(client.emit('orders', new StreamRecord(orderOf(42), { eventId: 'order-o-42' })));
    await client.close();
    console.log(
      'Order 42 published a second time (as a relay that died before marking it sent would): the inbox must absorb it.',
    );
    await redis.xadd('orders', '*', 'customerId', 'legacy-crm', 'amount', '50000');
    console.log('One entry written the redis-cli way (XADD orders * customerId legacy-crm amount 50000).');

    step('Waiting until every group has processed every entry');
    const valid = ORDERS - INVALID.length;
    const expected = { 'inventory.reserved': ORDERS + 2, 'payments.charged': valid + 1 };
    const ledger = await waitUntil(
      async () => {
        const snapshot = await (await fetch(`${base}/orders/ledger`)).json();
        const pending = await totalPending(redis);
        const done = Object.entries(expected).every(([k, v]) => snapshot[k] === v) && pending === 0;
        return done ? snapshot : null;
      },
      'all groups to finish',
      60_000,
      exited,
    );
    console.log('What each group did:');
    for (const [key, value] of Object.entries(ledger)) console.log(`  ${key.padEnd(36)} ${value}`);

    step('From the database (GET /orders/summary): orders, charges, duplicates the inbox prevented');
    const summary = await (await fetch(`${base}/orders/summary`)).json();
    for (const [key, value] of Object.entries(summary)) console.log(`  ${key.padEnd(36)} ${value}`);

    step('Streams and groups (GET /streams)');
    console.log(await (await fetch(`${base}/streams`)).text());

    step('Dead letters (orders:dlq): parked for a human, with the reason');
    for (const [id, fields] of await redis.xrange('orders:dlq', '-', '+')) {
      const f = toObject(fields);
      console.log(
        `  ${id}  group=${f['dlq:group']}  reason=${f['dlq:reason']}  deliveries=${f['dlq:deliveries']}  error="${f['dlq:error']}"`,
      );
    }

    step('Readiness probe (GET /health/ready)');
    const ready = await (await fetch(`${base}/health/ready`)).json();
    const info = ready.info?.['redis-streams'] ?? ready.error?.['redis-streams'] ?? ready.details?.['redis-streams'];
    console.log(`status: ${ready.status}${info?.reason ? ` — ${info.reason}` : ''}`);

    step('Metrics (GET /metrics, acknowledged entries per group)');
    const metrics = await (await fetch(`${base}/metrics`)).text();
    for (const line of metrics.split('\n')) if (line.startsWith('redis_streams_entries_acked_total')) console.log(`  ${line}`);

    step('Reconciliation (GET /orders/reconcile): outbox events against charges, by event id');
    const report = await (await fetch(`${base}/orders/reconcile`)).json();
    console.log(
      `  ${report.expected} order events: ${report.appliedOnce} charged exactly once, ${report.deadLettered.length} dead-lettered ` +
        `(${report.deadLettered.join(', ')}), ${report.missing.length} missing, ${report.duplicated.length} charged twice`,
    );
    if (report.missing.length || report.duplicated.length || report.appliedOnce + report.deadLettered.length !== report.expected)
      throw new Error(`Reconciliation failed: ${JSON.stringify(report)}`);

    if (serve) {
      step(`Serving at ${base} — POST /orders, GET /streams, /health/live, /health/ready, /metrics. Ctrl-C stops.`);
      console.log(
        `Streams console: ${base}/streams-console — the overview shows the three groups of "orders", payments with its ` +
          '3 dead letters; open them, re-drive one (the demo guard allows writes) and watch the audit view record it.',
      );
      await new Promise((resolve) => process.once('SIGINT', resolve));
    }
    step('Stopping the app (SIGTERM: in-flight handlers finish and ack)');
  } finally {
    app.kill('SIGTERM');
    const code = await Promise.race([exited, sleep(15_000).then(() => 'timeout')]);
    if (code === 'timeout') app.kill('SIGKILL');
    await redis.quit();
    if (redisProcess) await redisProcess.stop();
    log.end();
  }
  console.log(bold('\nDemo finished: nothing pending, every order charged once or dead-lettered.'));
}

function orderOf(n) {
  return {
    orderId: `o-${n}`,
    customerId: `c-${n % 37}`,
    amount: INVALID.includes(n) ? -1 : 1000 + n,
    items: [{ sku: `sku-${n % 9}`, quantity: 1 + (n % 3) }],
    ...(FLAKY.includes(n) && { flakyPayments: 2 }),
  };
}

function postOrder(base, n) {
  return fetch(`${base}/orders`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(orderOf(n)),
  }).then(async (res) => {
    if (res.status !== 202) throw new Error(`POST /orders answered ${res.status}: ${await res.text()}`);
  });
}

async function totalPending(redis) {
  let total = 0;
  for (const group of ['payments', 'inventory', 'notifications']) {
    const [count] = await redis.xpending('orders', group);
    total += Number(count);
  }
  return total;
}

async function waitUntil(check, what, timeoutMs, exited) {
  let appExit = null;
  exited.then((code) => (appExit = code));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (appExit !== null)
      throw new Error(`The app exited (code ${appExit}) while waiting for ${what}; see reports/demo-app.log.`);
    const value = await check().catch(() => null);
    if (value) return value;
    await sleep(100);
  }
  throw new Error(`Timed out after ${timeoutMs / 1000} s waiting for ${what}; see reports/demo-app.log.`);
}

function toObject(fields) {
  const out = {};
  for (let i = 0; i + 1 < fields.length; i += 2) out[fields[i]] = fields[i + 1];
  return out;
}

main().catch((err) => {
  console.error(`\nDemo failed: ${err.message}`);
  process.exit(1);
});
