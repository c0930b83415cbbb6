export * from './metrics-options.interface.js';
export type { PromRegistry } from './prom-registry.interface.js';
export { METRIC_DEFINITIONS, METRICS_DEFAULTS } from './metrics.constants.js';
export * from './redis-streams.metrics.js';
