import type { SqlDatabase, SqlExecutor } from '../sql-database.interface.js';

/** The part of a PGlite transaction (or the PGlite instance) the adapter uses. */
export interface PgliteTransactionLike {
  query<R>(sql: string, params?: unknown[]): Promise<{ rows: R[] }>;
  exec(sql: string): Promise<unknown>;
}

/** The part of `@electric-sql/pglite`'s `PGlite` the adapter uses (so it stays an optional peer). */
export interface PgliteLike extends PgliteTransactionLike {
  transaction<T>(work: (tx: PgliteTransactionLike) => Promise<T>): Promise<T>;
  listen(channel: string, callback: (payload: string) => void): Promise<() => Promise<void>>;
}

/** An executor on a PGlite transaction. */
export function pgliteExecutor(tx: PgliteTransactionLike): SqlExecutor {
  return {
    query: async <R>(sql: string, params?: unknown[]) => (await tx.query<R>(sql, params)).rows,
    exec: async (sql: string) => {
      await tx.exec(sql);
    },
  };
}

/**
 * `SqlDatabase` over an embedded PGlite (PostgreSQL compiled to WebAssembly, in-process, no
 * server). PGlite has one connection, so transactions run one after another; it suits the
 * zero-setup path (demos, tests, a single small service), not concurrent load.
 */
export function pgliteDatabase(db: PgliteLike): SqlDatabase<PgliteTransactionLike> {
  return {
    transaction: (work) => db.transaction(work),
    executor: pgliteExecutor,
    async listen(channel, onNotify) {
      // In-process: there is no connection to break, so onError is never called.
      return db.listen(channel, () => onNotify());
    },
  };
}
