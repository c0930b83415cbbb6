import { createRequire } from 'node:module';
import { type PgPoolLike, pgDatabase } from '../database/adapters/pg.adapter.js';
import type { SqlDatabase } from '../database/sql-database.interface.js';
import { type Parsed, stringOption } from './cli-args.js';
import { CLI_DEFAULTS } from './cli.constants.js';
import { UsageError } from './errors/usage.error.js';
import { redactUrl } from '../redis/redact-url.js';
import { URL_FIX } from './redis-url.js';

/** What the CLI uses of node-postgres: a pool it can close. */
interface PgModule {
  Pool: new (config: { connectionString: string; max: number; connectionTimeoutMillis: number }) => PgPoolLike & {
    query(sql: string): Promise<unknown>;
    end(): Promise<void>;
    on(event: 'error', listener: (err: Error) => void): unknown;
  };
}

/** An open database for one command, and how to close it. */
export interface CliDatabase {
  db: SqlDatabase<unknown>;
  /** The URL without its password, for messages. */
  where: string;
  close(): Promise<void>;
}

/** How long a command waits for PostgreSQL before saying it cannot reach it. */

export const PG_MISSING =
  'This command reads PostgreSQL through node-postgres, an optional peer dependency that is not installed: run "npm install pg".';

/**
 * Loads node-postgres on first use, so that the other commands (and the library) never need it.
 * `load` is `require` from this file (pg is CommonJS).
 */
export function loadPg(load: (id: string) => unknown = createRequire(import.meta.url)): PgModule {
  try {
    return load('pg') as PgModule;
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND' && /'pg'/.test((err as Error).message);
    if (missing) throw new Error(PG_MISSING, { cause: err });
    throw err;
  }
}

/** `--database-url`, else DATABASE_URL: a postgres:// URL, or a UsageError saying what to pass. */
export function databaseUrlFrom(parsed: Parsed, env: NodeJS.ProcessEnv): string {
  const url = stringOption(parsed, 'database-url') ?? env.DATABASE_URL;
  if (url === undefined || url === '') {
    throw new UsageError('--database-url <postgres://user@host:5432/db> is required (or set DATABASE_URL).');
  }
  const setting = stringOption(parsed, 'database-url') === undefined ? 'DATABASE_URL' : '--database-url';
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    throw new UsageError(`${setting} must be a postgres:// or postgresql:// URL, got "${redactUrl(url)}".`);
  }
  // node-postgres would throw "Invalid URL" from inside the connection: exit 4, as if it were down.
  if (!URL.canParse(url)) throw new UsageError(`${setting} is not a valid URL: "${redactUrl(url)}". ${URL_FIX}`);
  return url;
}

/** Connects a one-connection pool and checks it answers, failing with where PostgreSQL was expected. */
export async function openDatabase(url: string, pg: PgModule = loadPg()): Promise<CliDatabase> {
  const pool = new pg.Pool({ connectionString: url, max: 1, connectionTimeoutMillis: CLI_DEFAULTS.databaseConnectTimeoutMs });
  // An idle connection the server ends (a restart) must not crash the command; the next query fails.
  pool.on('error', () => undefined);
  const where = redactUrl(url);
  try {
    await pool.query('SELECT 1');
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw new Error(
      `Could not reach PostgreSQL at ${where} (${describeError(err)}). Start it, or pass --database-url (or DATABASE_URL) where it runs.`,
      { cause: err },
    );
  }
  return { db: pgDatabase(pool), where, close: () => pool.end() };
}

/** The error's message, else its code (a refused connection can come as an AggregateError without one). */
export function describeError(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { errors?: Array<{ code?: string }> };
  return e.message || e.code || e.errors?.[0]?.code || String(err);
}
