/** Injection token of the RedisStreamsClient provided by RedisStreamsModule. */
export const REDIS_STREAMS_CLIENT = Symbol('REDIS_STREAMS_CLIENT');
