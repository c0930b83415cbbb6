export * from './audit-incomplete.error.js';
export * from './canary-running.error.js';
export * from './operation.error.js';
