export * from './outbox.js';
export * from './outbox-relay.js';
export * from './outbox-relay-options.interface.js';
export * from './outbox.metrics.js';
export * from './outbox.health.js';
