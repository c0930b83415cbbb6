export * from './redis-streams.server.js';
export type { HandlerPath } from './handler-paths.js';
export type { StreamConsumer } from '../consumer/index.js';
export type { ResolvedHandlerOptions, StreamSubscription } from '../consumer/index.js';
export { partitionOf, partitionStream, partitionStreams } from '../keys/partition-keys.js';
export { type StreamPattern, streamPattern } from './stream-pattern.js';
