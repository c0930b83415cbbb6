import { pgDatabase } from 'nest-redis-streams/database';
import { waitFor } from '../support/helpers.js';
import { createDatabase, testPool, usePostgresServer } from './support/databases.js';

usePostgresServer();
jest.setTimeout(30_000);

describe('pgDatabase on PostgreSQL 15', () => {
  it('rejects a transaction whose connection the server ended while it waited, without crashing the process, and goes on with a new connection', async () => {
    const pool = testPool(await createDatabase(), 2);
    try {
      const db = pgDatabase(pool);
      await expect(
        db.transaction(async (tx) => {
          const [{ pid }] = await db.executor(tx).query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
          // The other connection ends this one while the transaction waits between statements
          // (as a server restart does): node-postgres emits 'error' on the checked-out client.
          await pool.query('SELECT pg_terminate_backend($1)', [pid]);
          await waitFor(
            async () => (await pool.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid])).rows.length === 0,
            'the backend to end',
          );
          await db.executor(tx).query('SELECT 1');
        }),
      ).rejects.toThrow(/terminating connection|Connection terminated|not queryable/);
      expect(await db.transaction((tx) => db.executor(tx).query('SELECT 1 AS one'))).toEqual([{ one: 1 }]);
    } finally {
      await pool.end();
    }
  });
});
