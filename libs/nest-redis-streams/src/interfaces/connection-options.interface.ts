import type { RedisOptions } from 'ioredis';

/**
 * How to reach Redis: a `redis://` URL or ioredis options. The transport opens its own
 * connections from it (one blocking reader per stream and group, one for commands).
 */
export type RedisConnectionOptions = string | RedisOptions;
