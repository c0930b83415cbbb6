export * from './outbox.js';
export * from './outbox-relay.js';
export * from './outbox-relay-options.interface.js';
