import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import type { SqlDatabase } from '../sql-database.interface.js';

const PACKAGE_NAME = 'nest-redis-streams';

/**
 * The folder of the nearest `package.json` named nest-redis-streams above `dir`. The module sits
 * at different depths below the package root (src/ and dist/ at one, dist/cjs/ one deeper, with
 * its own nameless package.json), so a fixed relative path is right in one build only.
 */
function packageRoot(dir: string): string | null {
  for (let at = dir; ; at = dirname(at)) {
    const manifest = join(at, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === PACKAGE_NAME)
      return at;
    if (dirname(at) === at) return null;
  }
}

const HERE = dirname(fileURLToPath(import.meta.url));

/** The package's `migrations/` folder (beside its package.json, whichever build is loaded). */
export const MIGRATIONS_DIR = join(packageRoot(HERE) ?? join(HERE, '../../..'), 'migrations');

/** One migration file of the package. */
export interface Migration {
  /** File name, e.g. `001_inbox.sql`; applied in name order, recorded in `nrs_schema_migrations`. */
  name: string;
  sql: string;
}

/** The SQL migrations shipped with the package, in the order they apply. */
export function listMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  if (!existsSync(dir)) {
    throw new Error(
      `The migrations folder ${dir} does not exist: the package's migrations/ folder is missing from the installed package (it ships beside its package.json), or the path passed to listMigrations is wrong.`,
    );
  }
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
