export type * from './retention-options.interface.js';
export * from './stream-trimmer.service.js';
export * from './trim-safely.js';
export * from './acked-retention.js';
export { RETENTION_DEFAULTS } from './trim.constants.js';
