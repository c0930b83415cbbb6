export * from './redis-streams.events.js';
export type * from './transport-events.js';
