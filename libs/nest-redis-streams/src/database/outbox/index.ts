export * from './outbox.js';
export * from './outbox-relay.js';
export * from './outbox-relay-options.interface.js';
export * from './outbox.metrics.js';
export * from './outbox.health.js';
export * from './errors/index.js';
export { isPermanentPublishError } from './errors/permanent-publish-error.js';
export type { OutboxBacklog } from './outbox-round.js';
