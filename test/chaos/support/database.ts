// Shared steps of the database chaos specs (test/chaos/database-*.spec.ts): a private PostgreSQL
// server per file, a database per scenario with the library's tables and the business tables,
// the orders and payments worker processes, and the figures read back from the database.
import { Pool } from 'pg';
import { DeadLetterService } from 'nest-redis-streams';
import { applyMigrations, pgDatabase, reconcile, type ReconcileReport, type SqlDatabase } from 'nest-redis-streams/database';
import { CHARGE_HANDLER, DB_CHAOS_TABLES, dbLedger } from '../../workers/db-chaos-schema.js';
import { pendingCount, waitFor } from '../../support/helpers.js';
import type { ChaosProcess, ChaosWorker } from './processes.js';
import type { ChaosRow, Scenario } from './scenario.js';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startPostgres } = require('../../../scripts/lib/postgres-process.cjs') as {
  startPostgres(): Promise<PostgresServer>;
};

/** A private PostgreSQL server (scripts/lib/postgres-process.cjs). */
export interface PostgresServer {
  url: string;
  kill(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<unknown>;
  stop(): Promise<void>;
}

/** Starts the file's PostgreSQL server in beforeAll and stops it in afterAll. */
export function usePostgres(): () => PostgresServer {
  let server: PostgresServer | null = null;
  beforeAll(async () => {
    server = await startPostgres();
  }, 30_000);
  afterAll(async () => {
    await server?.stop();
  }, 30_000);
  return () => server!;
}

/** One scenario's database: migrated, with `orders` and `charges`. */
export interface ScenarioDatabase {
  url: string;
  pool: Pool;
  db: SqlDatabase<any>;
  close(): Promise<void>;
}

export async function scenarioDatabase(server: PostgresServer, s: Scenario): Promise<ScenarioDatabase> {
  const name = s.run.replace(/\W/g, '_');
  const admin = new Pool({ connectionString: server.url, max: 1 });
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = server.url.replace(/\/postgres$/, `/${name}`);
  const pool = new Pool({ connectionString: url, max: 4 });
  // Idle connections break when a scenario restarts the server; queries after it reconnect.
  pool.on('error', () => undefined);
  const db = pgDatabase(pool);
  await applyMigrations(db);
  await pool.query(DB_CHAOS_TABLES);
  return { url, pool, db, close: () => pool.end() };
}

/** The workers of these specs; processes.ts lists the suite's other workers in its ChaosWorker type. */
type DbWorker = 'db-orders' | 'db-payments';

export function spawnDbWorker(
  s: Scenario,
  d: ScenarioDatabase,
  worker: DbWorker,
  name: string,
  env: Record<string, string | number> = {},
): ChaosProcess {
  return s.spawn(worker as unknown as ChaosWorker, name, { DATABASE_URL: d.url, ...env });
}

/** A payments process, once it listens. */
export async function payments(
  s: Scenario,
  d: ScenarioDatabase,
  name: string,
  env: Record<string, string | number> = {},
): Promise<ChaosProcess> {
  const proc = spawnDbWorker(s, d, 'db-payments', name, env);
  await proc.waitFor((m) => m.type === 'ready', 'ready');
  return proc;
}

/** What the database holds after a run. */
export interface Effects {
  orders: number;
  chargedOrders: number;
  charges: number;
  inboxRows: number;
  unsent: number;
}

export async function effects(d: ScenarioDatabase): Promise<Effects> {
  const [row] = (
    await d.pool.query<Effects>(`SELECT
      (SELECT count(*)::int FROM orders) AS orders,
      (SELECT count(DISTINCT order_id)::int FROM charges) AS "chargedOrders",
      (SELECT count(*)::int FROM charges) AS charges,
      (SELECT count(*)::int FROM nrs_inbox) AS "inboxRows",
      (SELECT count(*)::int FROM nrs_outbox WHERE sent_at IS NULL) AS unsent`)
  ).rows;
  return row;
}

/** Waits until every order of the run is charged, the outbox is empty and nothing is pending. */
export async function settleCharges(s: Scenario, d: ScenarioDatabase, orders: number, timeoutMs: number): Promise<Effects> {
  let last = await effects(d);
  await waitFor(
    async () => {
      last = await effects(d);
      return (
        last.orders === orders &&
        last.chargedOrders === orders &&
        last.unsent === 0 &&
        (await pendingCount(s.data, s.stream, 'payments')) === 0
      );
    },
    `${orders} orders charged`,
    timeoutMs,
  ).catch(() => undefined);
  return last;
}

/** The ledger's counters of the run's workers. */
export async function counters(s: Scenario): Promise<{ outcomes: Record<string, number>; relay: Record<string, number> }> {
  const keys = dbLedger(s.run);
  const read = async (key: string) =>
    Object.fromEntries(Object.entries(await s.ledger.hgetall(key)).map(([k, v]) => [k, Number(v)]));
  return { outcomes: await read(keys.outcomes), relay: await read(keys.relay) };
}

/**
 * The library's reconciliation of the run, twice: outbox against the inbox, and outbox against
 * the `charges` table itself (which would show a charge applied twice).
 */
export async function reconcileRun(
  s: Scenario,
  d: ScenarioDatabase,
): Promise<{ byInbox: ReconcileReport; byCharges: ReconcileReport }> {
  const window = { from: new Date(s.started - 60_000), to: new Date(Date.now() + 60_000) };
  const deadLetters = { service: new DeadLetterService(s.data), stream: s.dlq };
  const byInbox = await reconcile(d.db, {
    ...window,
    source: { outboxStream: s.stream },
    target: { group: 'payments', handler: CHARGE_HANDLER },
    deadLetters,
  });
  const byCharges = await reconcile(d.db, {
    ...window,
    source: { outboxStream: s.stream },
    target: { query: 'SELECT event_id FROM charges WHERE event_id = ANY($1)', group: 'payments' },
    deadLetters,
  });
  return { byInbox, byCharges };
}

/** How many entries of the stream carry each event id more than once (re-published copies). */
export async function republished(s: Scenario): Promise<{ entries: number; copies: Map<string, number> }> {
  const entries = await s.data.xrange(s.stream, '-', '+');
  const count = new Map<string, number>();
  for (const [, fields] of entries) {
    const at = fields.findIndex((f, i) => i % 2 === 0 && f === 'event_id');
    count.set(fields[at + 1], (count.get(fields[at + 1]) ?? 0) + 1);
  }
  return { entries: entries.length, copies: new Map([...count].filter(([, n]) => n > 1)) };
}

/** A chaos table row from the database's figures (not the Redis ledger's). */
export function dbRow(
  s: Scenario,
  size: string,
  e: Effects,
  r: { byCharges: ReconcileReport },
  duplicatesPrevented: number,
): ChaosRow {
  return {
    n: s.n,
    sub: s.sub,
    scenario: s.title,
    size,
    produced: e.orders,
    processed: e.chargedOrders,
    lost: r.byCharges.missing.length,
    duplicates: duplicatesPrevented,
    dupEffects: e.charges - e.chargedOrders,
    deadLettered: r.byCharges.deadLettered.length,
    tombstoned: 0,
    wallMs: Date.now() - s.started,
    notes: [`seed ${s.seed}`, ...s.notes].join('; '),
    passed: false,
  };
}
