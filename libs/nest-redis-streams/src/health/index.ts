export * from './health-options.interface.js';
export { HEALTH_DEFAULTS, THRESHOLD_DEFAULTS } from './health.constants.js';
export * from './redis-streams.health.js';
export { formatStatsTable } from './stats-table.js';
export type { StreamHealthStatus } from './stream-health.js';
export * from './stream-stats.js';
export { collectServerStats, type ConsumerStats } from './server-stats.js';
