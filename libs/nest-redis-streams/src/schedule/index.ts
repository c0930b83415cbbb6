// Delayed delivery: a stream's schedule (keys/schedule-keys.ts), the scripts that fill, move, list
// and cancel it, and the mover every server runs for the streams it serves.
export * from './schedule-store.js';
export * from './schedule-mover.js';
