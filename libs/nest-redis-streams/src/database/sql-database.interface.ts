/** Runs statements on one connection, inside the transaction it was made for. */
export interface SqlExecutor {
  /** One statement with `$1`-style parameters; resolves with its rows (empty for a statement without RETURNING). */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  /** Several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

/** Stops a LISTEN started by `SqlDatabase.listen`. */
export type Unlisten = () => Promise<void>;

/**
 * What the inbox, the outbox and reconciliation need of a PostgreSQL client: transactions, and
 * an executor for a transaction the caller already holds (`Tx` is the adapter's own handle: a
 * node-postgres client, a TypeORM EntityManager, a PGlite transaction). Adapters for those three
 * ship with the library (`pgDatabase`, `typeormDatabase`, `pgliteDatabase`); another client needs
 * these three members.
 */
export interface SqlDatabase<Tx = unknown> {
  /** Runs `work` in a new transaction: commits when it resolves, rolls back when it throws. */
  transaction<T>(work: (tx: Tx) => Promise<T>): Promise<T>;
  /** Statements on `tx`, the caller's open transaction. */
  executor(tx: Tx): SqlExecutor;
  /**
   * Calls `onNotify` for each NOTIFY on `channel` until the returned function is called;
   * `onError` when the listening connection broke (the caller listens again later). Optional:
   * without it the outbox relay only polls.
   */
  listen?(channel: string, onNotify: () => void, onError: (err: Error) => void): Promise<Unlisten>;
}
