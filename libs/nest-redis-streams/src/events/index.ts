export * from './redis-streams.events.js';
export * from './transport-events.js';
