export * from './redis-streams.context.js';
export * from './redis-streams-batch.context.js';
