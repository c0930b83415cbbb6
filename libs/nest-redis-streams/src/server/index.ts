export * from './redis-streams.server.js';
export type { StreamConsumer } from '../consumer/index.js';
export type { ResolvedHandlerOptions, StreamSubscription } from './stream-subscription.js';
export * from './partitions.js';
export { type StreamPattern, streamPattern } from './stream-pattern.js';
