export * from './connection.factory.js';
export * from './errors/reply-errors.js';
export * from './replies.js';
export * from './scripts.js';
export * from './connect.js';
