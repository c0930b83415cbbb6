// Every Redis key and stream name the library builds, with the hash-slot helpers that keep keys
// written together in one slot. A leaf: it imports nothing of the library, so any area may use it.
export * from './audit-keys.js';
export * from './blocked-key-keys.js';
export * from './claim-epoch-keys.js';
export * from './dead-letter-keys.js';
export * from './handler-error-keys.js';
export * from './idempotency-keys.js';
export * from './ownership-keys.js';
export * from './partition-keys.js';
export * from './probe-keys.js';
export * from './reply-keys.js';
export * from './retry-wait-keys.js';
export * from './schedule-keys.js';
export * from './slots.js';
export * from './trim-audit-keys.js';
export * from './stream-id.js';
export * from './stream-range.js';
