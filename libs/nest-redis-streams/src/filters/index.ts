export * from './redis-streams-exception.filter.js';
