export * from './reconcile.js';
export { findDeadLetterStreams } from './dead-letter-streams.js';
export { deadLetterStreamsOf } from '../../keys/dead-letter-keys.js';
