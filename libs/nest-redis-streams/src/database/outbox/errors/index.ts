export * from './outbox-event-refused.error.js';
export * from './duplicate-outbox-event.error.js';
