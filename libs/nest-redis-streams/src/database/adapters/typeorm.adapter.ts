import type { SqlDatabase, SqlExecutor } from '../sql-database.interface.js';
import { type PgClientLike, quoteIdentifier } from './pg.adapter.js';

/** The part of a TypeORM `QueryRunner` the adapter uses (so `typeorm` stays an optional peer). */
export interface TypeormQueryRunnerLike {
  query(sql: string, params?: unknown[], structured?: boolean): Promise<unknown>;
  connect(): Promise<unknown>;
  release(): Promise<void>;
}

/** The part of a TypeORM `EntityManager` the adapter uses. */
export interface TypeormManagerLike {
  query(sql: string, params?: unknown[]): Promise<unknown>;
  readonly queryRunner?: TypeormQueryRunnerLike;
}

/** The part of a TypeORM `DataSource` the adapter uses. */
export interface TypeormDataSourceLike {
  transaction<T>(work: (manager: TypeormManagerLike) => Promise<T>): Promise<T>;
  createQueryRunner(): TypeormQueryRunnerLike;
}

/** An executor on a TypeORM EntityManager inside the caller's transaction. */
export function typeormExecutor(manager: TypeormManagerLike): SqlExecutor {
  return {
    async query<R>(sql: string, params?: unknown[]) {
      // The structured result has the rows under `records` for every command; the plain one
      // returns [rows, count] for UPDATE and DELETE on PostgreSQL.
      if (manager.queryRunner) return ((await manager.queryRunner.query(sql, params, true)) as { records: R[] }).records;
      const raw = await manager.query(sql, params);
      return (Array.isArray(raw) && Array.isArray(raw[0]) ? raw[0] : raw) as R[];
    },
    async exec(sql: string) {
      await manager.query(sql);
    },
  };
}

/**
 * `SqlDatabase` over a TypeORM `DataSource` with the `postgres` driver (what `@nestjs/typeorm`'s
 * `@InjectDataSource()` gives). A transaction the caller holds is the `EntityManager` that
 * `dataSource.transaction(manager => ...)` passes (or `queryRunner.manager`).
 */
export function typeormDatabase(dataSource: TypeormDataSourceLike): SqlDatabase<TypeormManagerLike> {
  return {
    transaction: (work) => dataSource.transaction(work),
    executor: typeormExecutor,
    async listen(channel, onNotify, onError) {
      const runner = dataSource.createQueryRunner();
      // The postgres driver's query runner connects a node-postgres client from TypeORM's pool.
      const client = (await runner.connect()) as PgClientLike;
      const onNotification = (message: { channel: string }) => {
        if (message.channel === channel) onNotify();
      };
      client.on('notification', onNotification);
      client.on('error', onError);
      await runner.query(`LISTEN ${quoteIdentifier(channel)}`);
      return async () => {
        client.removeAllListeners('notification');
        await runner.query(`UNLISTEN ${quoteIdentifier(channel)}`).catch(() => undefined);
        await runner.release();
      };
    },
  };
}
