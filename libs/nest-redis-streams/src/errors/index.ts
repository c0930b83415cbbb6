export * from './invalid-options.error.js';
export * from './invalid-event-id.error.js';
export * from './non-retryable.error.js';
export * from './undecodable-entry.error.js';
export * from './undecodable-event-id.error.js';
export * from './event-in-progress.error.js';
export { InvalidDelayError, type DeliveryTime } from './invalid-delay.error.js';
export { RetryLater } from './retry-later.error.js';
