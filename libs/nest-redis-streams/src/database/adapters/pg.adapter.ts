import type { SqlDatabase, SqlExecutor, Unlisten } from '../sql-database.interface.js';

/** The part of a node-postgres `Client`/`PoolClient` the adapter uses (so `pg` stays an optional peer). */
export interface PgClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
  on(event: 'notification', listener: (message: { channel: string }) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
  removeAllListeners(event?: string): unknown;
  removeListener(event: 'error', listener: (err: Error) => void): unknown;
}

/** The part of a node-postgres `Pool` the adapter uses. */
export interface PgPoolLike {
  connect(): Promise<PgClientLike & { release(destroy?: boolean | Error): void }>;
}

/** An executor on a node-postgres client (or pool client) inside the caller's transaction. */
export function pgExecutor(client: Pick<PgClientLike, 'query'>): SqlExecutor {
  return {
    query: async <R>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as R[],
    exec: async (sql: string) => {
      // No parameters: node-postgres uses the simple protocol, which accepts several statements.
      await client.query(sql);
    },
  };
}

/**
 * `SqlDatabase` over a node-postgres `Pool`. A transaction the caller holds is the `PoolClient`
 * (or `Client`) on which it ran `BEGIN`: `inbox.runIn(client, ...)`, `outbox.add(client, ...)`.
 */
export function pgDatabase(pool: PgPoolLike): SqlDatabase<Pick<PgClientLike, 'query'>> {
  return {
    async transaction(work) {
      const client = await pool.connect();
      let broken: Error | undefined;
      // The pool listens for errors on idle clients only. A server that ends the connection while
      // this transaction waits between statements (a restart, pg_terminate_backend) would emit an
      // 'error' nobody handles and crash the process; keep it instead: the next statement rejects.
      const onError = (err: Error) => (broken = err);
      client.on('error', onError);
      try {
        await client.query('BEGIN');
        const result = await work(client);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch((rollbackErr: Error) => (broken = rollbackErr));
        throw err;
      } finally {
        client.removeListener('error', onError);
        // A connection that broke or could not roll back is in an unknown state: destroy it, do not reuse it.
        client.release(broken);
      }
    },
    executor: pgExecutor,
    async listen(channel, onNotify, onError): Promise<Unlisten> {
      const client = await pool.connect();
      client.on('notification', (message) => {
        if (message.channel === channel) onNotify();
      });
      client.on('error', onError);
      try {
        await client.query(`LISTEN ${quoteIdentifier(channel)}`);
      } catch (err) {
        client.removeAllListeners();
        client.release(true);
        throw err;
      }
      return async () => {
        client.removeAllListeners();
        // LISTEN state belongs to the session: destroy the connection rather than return it to the pool.
        client.release(true);
      };
    },
  };
}

/** A double-quoted SQL identifier (channel names of LISTEN cannot be parameters). */
export function quoteIdentifier(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
