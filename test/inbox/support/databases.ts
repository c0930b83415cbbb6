import { PGlite } from '@electric-sql/pglite';
import { Pool } from 'pg';
import { DataSource } from 'typeorm';
import { applyMigrations, pgDatabase, pgliteDatabase, type SqlDatabase, typeormDatabase } from 'nest-redis-streams/database';

// CommonJS helper shared with the demo and the chaos suite; Jest loads tests as CommonJS.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startPostgres } = require('../../../scripts/lib/postgres-process.cjs') as {
  startPostgres(): Promise<PostgresServer>;
};

/** A private PostgreSQL server started by a test (scripts/lib/postgres-process.cjs). */
export interface PostgresServer {
  url: string;
  port: number;
  stop(): Promise<void>;
  kill(signal?: string): Promise<void>;
  start(): Promise<unknown>;
  restart(): Promise<void>;
}

/** One database with the library's tables, behind one adapter, plus a plain way to look inside. */
export interface TestDatabase {
  db: SqlDatabase<any>;
  /** Runs one statement outside any test transaction; its rows. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  close(): Promise<void>;
}

/** How a suite gets a fresh, migrated database of one kind. */
export interface DatabaseKind {
  name: string;
  /**
   * Whether transactions run side by side (a server with a connection pool). PGlite has one
   * connection: a second transaction starts only after the first one ended.
   */
  concurrentTransactions: boolean;
  open(): Promise<TestDatabase>;
}

let server: PostgresServer | null = null;
let databases = 0;

/** Starts the file's PostgreSQL server once (call in beforeAll) and stops it and the embedded PGlite (afterAll). */
export function usePostgresServer(): () => PostgresServer {
  beforeAll(async () => {
    server = await startPostgres();
  }, 30_000);
  afterAll(async () => {
    await closeEmbedded();
    await server?.stop();
    server = null;
  }, 30_000);
  return () => {
    if (!server) throw new Error('The PostgreSQL server is not started: call usePostgresServer() at the top of the file.');
    return server;
  };
}

/** A new database on the file's server, so tests never see each other's rows. */
export async function createDatabase(): Promise<string> {
  if (!server) throw new Error('The PostgreSQL server is not started: call usePostgresServer() at the top of the file.');
  databases += 1;
  const name = `t_${process.pid}_${databases}`;
  const admin = new Pool({ connectionString: server.url, max: 1 });
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return server.url.replace(/\/postgres$/, `/${name}`);
}

/** A node-postgres pool whose idle-connection errors (a server restart) do not crash the test. */
export function testPool(url: string, max = 10): Pool {
  const pool = new Pool({ connectionString: url, max });
  pool.on('error', () => undefined);
  return pool;
}

export const pgKind: DatabaseKind = {
  name: 'node-postgres on PostgreSQL 15',
  concurrentTransactions: true,
  async open() {
    const pool = testPool(await createDatabase());
    const db = pgDatabase(pool);
    await applyMigrations(db);
    return {
      db,
      query: async (sql, params) => (await pool.query(sql, params)).rows,
      close: () => pool.end(),
    };
  },
};

export const typeormKind: DatabaseKind = {
  name: 'TypeORM on PostgreSQL 15',
  concurrentTransactions: true,
  async open() {
    const dataSource = await new DataSource({ type: 'postgres', url: await createDatabase() }).initialize();
    const db = typeormDatabase(dataSource);
    await applyMigrations(db);
    return {
      db,
      query: (sql, params) => dataSource.query(sql, params),
      close: () => dataSource.destroy(),
    };
  },
};

let embedded: Promise<PGlite> | null = null;
let schemas = 0;

/** Closes the file's embedded PGlite, if a test opened one. */
async function closeEmbedded(): Promise<void> {
  const pglite = embedded;
  embedded = null;
  await (await pglite)?.close();
}

/**
 * Embedded PostgreSQL (WebAssembly, in this process): the zero-setup path, no server needed.
 * Starting PGlite takes seconds, so the file shares one instance and each test gets a schema of
 * its own (PGlite has one session, so `search_path` holds for every statement that follows).
 */
export const pgliteKind: DatabaseKind = {
  name: 'embedded PGlite',
  concurrentTransactions: false,
  async open() {
    embedded ??= PGlite.create();
    const pglite = await embedded;
    schemas += 1;
    const schema = `t_${schemas}`;
    await pglite.exec(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
    const db = pgliteDatabase(pglite);
    await applyMigrations(db);
    return {
      db,
      // Queued behind a transaction in flight: PGlite runs one statement or transaction at a time.
      query: async (sql, params) => (await pglite.query<any>(sql, params)).rows,
      close: async () => {
        await pglite.exec(`SET search_path TO public; DROP SCHEMA ${schema} CASCADE`);
      },
    };
  },
};
