export * from './connection-options.interface.js';
export * from './payload-codec.interface.js';
export * from './server-options.interface.js';
export * from './stream-handler-options.interface.js';
