export * from './inject-redis-streams-client.decorator.js';
export * from './redis-streams.constants.js';
export {
  REDIS_STREAMS_OPTIONS,
  type RedisStreamsModuleAsyncOptions,
  type RedisStreamsModuleExtras,
  type RedisStreamsModuleOptions,
  type RedisStreamsOptionsFactory,
} from './redis-streams.module-definition.js';
export * from './redis-streams.module.js';
