// The `nest-redis-streams/database` entry point (package.json `exports`), not re-exported by the root.
export * from './sql-database.interface.js';
export * from './adapters/index.js';
export * from './migrations/index.js';
export * from './inbox/index.js';
export * from './outbox/index.js';
export * from './reconcile/index.js';
