// The `nest-redis-streams/console` entry point (package.json `exports`), not re-exported by the root.
export type * from './console-options.interface.js';
export { CONTENT_SECURITY_POLICY } from './console.constants.js';
export * from './redis-streams-console.module.js';
