import { Redis, type RedisOptions } from 'ioredis';
import { MAX_RECONNECT_BACKOFF_MS, defaultRedisUrl } from '../constants.js';
import type { RedisConnectionOptions } from '../interfaces/connection-options.interface.js';

/**
 * Opens a connection named `nrs:<role>` (visible in CLIENT LIST). It retries for ever with a
 * capped back-off: a Redis restart must never end consumption.
 */
export function createRedisConnection(
  connection: RedisConnectionOptions | undefined,
  role: string,
  overrides: RedisOptions = {},
): Redis {
  const base: RedisOptions = {
    connectionName: `nrs:${role}`,
    retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 10), MAX_RECONNECT_BACKOFF_MS),
    lazyConnect: true,
    ...overrides,
  };
  const target = connection ?? defaultRedisUrl();
  return typeof target === 'string' ? new Redis(target, base) : new Redis({ ...target, ...base });
}

/** Readable address for messages, without credentials. */
export function describeConnection(connection: RedisConnectionOptions | undefined): string {
  const target = connection ?? defaultRedisUrl();
  if (typeof target === 'string') return target.replace(/\/\/[^@/]*@/, '//');
  return `redis://${target.host ?? '127.0.0.1'}:${target.port ?? 6379}`;
}
