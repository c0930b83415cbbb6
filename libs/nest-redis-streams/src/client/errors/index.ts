export * from './client-closed.error.js';
export * from './connection-failed.error.js';
export * from './emit-batch.error.js';
export * from './no-message-handler.error.js';
export * from './payload-too-large.error.js';
export * from './publish-failed.error.js';
export * from './request-timeout.error.js';
