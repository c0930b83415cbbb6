export * from './redis-streams.context.js';
