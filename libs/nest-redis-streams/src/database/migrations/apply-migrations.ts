import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import type { SqlDatabase } from '../sql-database.interface.js';

/** The package's `migrations/` folder: src/ and dist/ sit at the same depth below the package root. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../migrations/', import.meta.url));

/** One migration file of the package. */
export interface Migration {
  /** File name, e.g. `001_inbox.sql`; applied in name order, recorded in `nrs_schema_migrations`. */
  name: string;
  sql: string;
}

/** The SQL migrations shipped with the package, in the order they apply. */
export function listMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.sql'))
    .sort()
    .map((name) => ({ name, sql: readFileSync(join(dir, name), 'utf8') }));
}

// Any constant works; it only has to be the same in every process that migrates.
const MIGRATION_LOCK = 7_318_402_561;

/**
 * Creates or updates the inbox and outbox tables: applies, in one transaction, each shipped
 * migration not yet recorded in `nrs_schema_migrations`, and resolves with the names it applied.
 * Safe to call from every replica at start: an advisory lock makes them take turns. Teams with
 * their own migration tool can copy the files of `node_modules/nest-redis-streams/migrations`
 * into it instead.
 */
export async function applyMigrations<Tx>(db: SqlDatabase<Tx>, migrations: Migration[] = listMigrations()): Promise<string[]> {
  return db.transaction(async (tx) => {
    const sql = db.executor(tx);
    await sql.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await sql.exec(
      'CREATE TABLE IF NOT EXISTS nrs_schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set((await sql.query<{ name: string }>('SELECT name FROM nrs_schema_migrations')).map((r) => r.name));
    const applied: string[] = [];
    for (const migration of migrations) {
      if (done.has(migration.name)) continue;
      await sql.exec(migration.sql);
      await sql.query('INSERT INTO nrs_schema_migrations (name) VALUES ($1)', [migration.name]);
      applied.push(migration.name);
    }
    return applied;
  });
}
