// listMigrations() and applyMigrations() as an app calls them at start, with the package's own
// migrations/ folder found from whichever build (ESM or CommonJS) the app loaded.
import { applyMigrations, listMigrations, type SqlDatabase, type SqlExecutor } from 'nest-redis-streams/database';

/** A database that records the statements instead of running them: what is checked is that the files are found and read. */
function recordingDatabase(statements: string[]): SqlDatabase<null> {
  const executor: SqlExecutor = {
    query: async <R>(sql: string): Promise<R[]> => {
      statements.push(sql);
      return [];
    },
    exec: async (sql: string): Promise<void> => {
      statements.push(sql);
    },
  };
  return { transaction: (work) => work(null), executor: () => executor };
}

/** The names of the shipped migrations, after checking that applyMigrations ran each one's SQL. */
export async function checkMigrations(): Promise<string> {
  const listed = listMigrations();
  if (listed.length === 0) throw new Error('listMigrations() found no migration');
  const statements: string[] = [];
  const applied = await applyMigrations(recordingDatabase(statements));
  const names = listed.map((m) => m.name);
  if (applied.join(',') !== names.join(','))
    throw new Error(`applyMigrations() applied ${applied.join(',')}, expected ${names.join(',')}`);
  for (const table of ['nrs_inbox', 'nrs_outbox']) {
    if (!statements.some((sql) => sql.includes(`CREATE TABLE IF NOT EXISTS ${table}`)))
      throw new Error(`applyMigrations() never created ${table}`);
  }
  return names.join(',');
}
