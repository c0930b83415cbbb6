// The `nest-redis-streams` entry point: the transport, client, health, metrics and operations.
// The console and the SQL inbox/outbox have entry points of their own (`nest-redis-streams/console`,
// `nest-redis-streams/database`, in package.json `exports`), so an app that only moves events does
// not load the console's controllers or the SQL adapters.
export * from './codec/index.js';
export { ENVELOPE, SERVER_DEFAULTS } from './constants.js';
export { DEAD_LETTER_SUFFIX } from './keys/index.js';
export * from './context/index.js';
export * from './errors/index.js';
export * from './events/index.js';
export * from './interfaces/index.js';
export * from './dead-letter/index.js';
export * from './server/index.js';
export * from './client/index.js';
export * from './health/index.js';
export * from './metrics/index.js';
export * from './module/index.js';
export * from './trim/index.js';
export * from './idempotency/index.js';
export * from './filters/index.js';
export * from './operations/index.js';
export { ScheduleMover, type ScheduleMoverOptions, type ScheduleSummary, type ScheduledEntry } from './schedule/index.js';
