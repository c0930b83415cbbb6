export * from './usage.error.js';
