import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import { applyMigrations, pgDatabase, pgliteDatabase, type SqlDatabase } from 'nest-redis-streams/database';

/** The token of the demo's `SqlDatabase`. */
export const DATABASE = Symbol('DATABASE');

/** The demo's business tables; the library's inbox and outbox tables come from its migrations. */
const DEMO_TABLES = `
  CREATE TABLE IF NOT EXISTS orders (
    id text PRIMARY KEY, customer_id text NOT NULL, amount numeric NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
  -- No unique key on purpose: the inbox is what keeps a redelivered order from a second charge.
  CREATE TABLE IF NOT EXISTS charges (
    order_id text NOT NULL, event_id text, amount numeric NOT NULL, charged_at timestamptz NOT NULL DEFAULT now());
  -- Copies the inbox recognised and acked without charging (for the demo's summary).
  CREATE TABLE IF NOT EXISTS duplicates_prevented (
    event_id text NOT NULL, entry_id text NOT NULL, seen_at timestamptz NOT NULL DEFAULT now());
`;

/** An open database and how to close it. */
export interface DemoDatabase {
  db: SqlDatabase<any>;
  /** Where it lives, for the log (never the password). */
  description: string;
  close(): Promise<void>;
}

/**
 * Opens the demo's database: a real PostgreSQL when DATABASE_URL is set, otherwise an embedded
 * PGlite in memory (no setup; it starts empty every run). Applies the library's migrations and
 * the demo's tables.
 */
export async function openDemoDatabase(url = process.env.DATABASE_URL): Promise<DemoDatabase> {
  let opened: DemoDatabase;
  if (url) {
    const { Pool } = await import('pg');
    const pool = new Pool({ connectionString: url, max: 10 });
    pool.on('error', (err) => new Logger('Database').warn(`Idle PostgreSQL connection failed: ${err.message}`));
    const where = new URL(url);
    opened = { db: pgDatabase(pool), description: `PostgreSQL at ${where.host}${where.pathname}`, close: () => pool.end() };
  } else {
    const { PGlite } = await import('@electric-sql/pglite');
    const pglite = await PGlite.create();
    opened = { db: pgliteDatabase(pglite), description: 'embedded PGlite (in memory)', close: () => pglite.close() };
  }
  await applyMigrations(opened.db);
  await opened.db.transaction((tx) => opened.db.executor(tx).exec(DEMO_TABLES));
  return opened;
}

/** Closes the database last: Nest calls it after the relay stopped and the transport closed. */
export class DemoDatabaseCloser implements OnApplicationShutdown {
  constructor(private readonly database: DemoDatabase) {}

  onApplicationShutdown(): Promise<void> {
    return this.database.close();
  }
}
