export * from './envelope.js';
export * from './json.codec.js';
export * from './reply.js';
