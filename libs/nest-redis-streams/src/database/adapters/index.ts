export { pgDatabase, pgExecutor, type PgClientLike, type PgPoolLike } from './pg.adapter.js';
export * from './typeorm.adapter.js';
export * from './pglite.adapter.js';
