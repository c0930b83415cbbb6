// The orders side of the database chaos scenarios: writes ORDERS orders, each with its outbox
// event in the same transaction (retried until it commits, so a PostgreSQL restart delays orders
// and loses none), and runs an OutboxRelay (from the start, or with RELAY_AFTER_ORDERS=1 once
// every order is written) that publishes them to STREAM. With HANG_AFTER_XADD=
// <event id> the relay stops right after that event's XADD, before its round marks anything sent,
// and says so: the scenario then SIGKILLs it there. Configured through env.
import { Redis } from 'ioredis';
import { Pool } from 'pg';
import { NEVER, type Observable, concat, tap } from 'rxjs';
import { RedisStreamsClient, type StreamRecord } from 'nest-redis-streams';
import { Outbox, OutboxRelay, pgDatabase } from 'nest-redis-streams/database';
import { type OrderEvent, dbLedger, orderEventId } from './db-chaos-schema.js';

const env = process.env;
const num = (name: string, fallback: number) => (env[name] === undefined ? fallback : Number(env[name]));
const keys = dbLedger(env.RUN!);
const stream = env.STREAM!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const ledger = new Redis(env.LEDGER_URL!, { maxRetriesPerRequest: null });
ledger.on('error', () => undefined);
const pool = new Pool({ connectionString: env.DATABASE_URL, max: 4, connectionTimeoutMillis: 2_000 });
pool.on('error', () => undefined);
const db = pgDatabase(pool);
const outbox = new Outbox(db);
const client = new RedisStreamsClient({ connection: env.DATA_URL });

/** The client, except that the event named by HANG_AFTER_XADD never completes after its XADD. */
const publisher = {
  emit(pattern: string, record: StreamRecord): Observable<unknown> {
    const sent = client.emit(pattern, record);
    if (record.eventId !== env.HANG_AFTER_XADD) return sent;
    return concat(
      sent.pipe(tap((entryId) => process.send?.({ type: 'hung-after-xadd', eventId: record.eventId, entryId }))),
      NEVER,
    );
  },
};

async function writeOrders(): Promise<void> {
  const total = num('ORDERS', 0);
  const first = num('FIRST', 0);
  const perTx = num('PER_TX', 10);
  const rate = num('RATE', 0);
  const crashEvery = num('CRASH_EVERY', 0);
  const started = Date.now();
  let retries = 0;
  for (let n = 0; n < total; n += perTx) {
    const orders: OrderEvent[] = [];
    for (let i = first + n; i < first + Math.min(total, n + perTx); i++) {
      const id = `${env.RUN}-o${i}`;
      orders.push({
        id,
        amount: 100 + (i % 50),
        ...(crashEvery > 0 && i % crashEvery === crashEvery - 1 ? { crashAfterCommit: true } : {}),
      });
    }
    for (;;) {
      try {
        await db.transaction(async (tx) => {
          const sql = db.executor(tx);
          for (const order of orders) {
            await sql.query('INSERT INTO orders (id, amount) VALUES ($1, $2)', [order.id, order.amount]);
            await outbox.add(tx, stream, order, { eventId: orderEventId(order.id), partitionKey: order.id });
          }
        });
        break;
      } catch {
        // The database is away (a restart): nothing of this transaction committed; write it again.
        retries++;
        void ledger.hincrby(keys.relay, 'order-write-retries', 1);
        await sleep(100);
      }
    }
    if (rate > 0) await sleep(Math.max(0, started + ((n + perTx) / rate) * 1000 - Date.now()));
  }
  process.send?.({ type: 'orders-written', orders: total, retries, ms: Date.now() - started });
}

async function main(): Promise<void> {
  const relay = new OutboxRelay(db, publisher, {
    batchSize: num('BATCH', 100),
    pollIntervalMs: 200,
    retryDelayMs: 100,
    maxRetryDelayMs: 1_000,
  });
  relay.observe({
    published: () => void ledger.hincrby(keys.relay, 'published', 1),
    failed: () => void ledger.hincrby(keys.relay, 'publish-failures', 1),
  });
  process.send?.({ type: 'ready' });
  // RELAY_AFTER_ORDERS=1: every order is in the outbox before the first round, so batches are full.
  if (env.RELAY_AFTER_ORDERS !== '1') relay.start();
  await writeOrders();
  relay.start();
}

main().catch((err: Error) => {
  process.send?.({ type: 'error', message: err.stack ?? String(err) }, () => process.exit(1));
});
