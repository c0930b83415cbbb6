export * from './idempotency-options.interface.js';
export * from './idempotency-store.interface.js';
export * from './idempotency.constants.js';
export * from './idempotency.interceptor.js';
export * from './idempotent.decorator.js';
export * from './redis-idempotency.store.js';
export * from './run-once.js';
