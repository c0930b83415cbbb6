export * from './reconcile.js';
export { deadLetterStreamsOf, findDeadLetterStreams } from './dead-letter-streams.js';
