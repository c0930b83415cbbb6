export * from './redis-streams.server.js';
export type { StreamConsumer } from './stream-consumer.js';
export type { ResolvedHandlerOptions, StreamSubscription } from './stream-subscription.js';
export { partitionOf, partitionStream, partitionStreams } from '../keys/partition-keys.js';
export { type StreamPattern, streamPattern } from './stream-pattern.js';
