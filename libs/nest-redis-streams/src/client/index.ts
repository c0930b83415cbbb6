export type * from './client-options.interface.js';
export { CLIENT_DEFAULTS } from './client.constants.js';
export * from './errors/index.js';
export * from './redis-streams.client.js';
export type { ResolvedClientOptions } from './resolve-client-options.js';
export { StreamRecord, type StreamRecordOptions } from './stream-record.js';
export type { IdempotentWritesOptions } from '../redis/idmp.js';
