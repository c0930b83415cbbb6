export * from './inbox.js';
