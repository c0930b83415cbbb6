import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { MAX_RECONNECT_BACKOFF_MS, defaultRedisUrl } from '../constants.js';
import type { ClusterConnectionOptions, RedisConnectionOptions } from '../interfaces/connection-options.interface.js';
import { redactUrl } from './redact-url.js';
import { lowerRedisScheme, redisUrlForIoredis } from './redis-url-scheme.js';

const retryStrategy = (attempt: number) => Math.min(50 * 2 ** Math.min(attempt, 10), MAX_RECONNECT_BACKOFF_MS);

export function isClusterConnection(connection: RedisConnectionOptions | undefined): connection is ClusterConnectionOptions {
  return typeof connection === 'object' && connection !== null && Array.isArray((connection as ClusterConnectionOptions).cluster);
}

/**
 * Opens a connection named `nrs:<role>` (visible in CLIENT LIST). It retries for ever with a
 * capped back-off: a Redis restart must never end consumption.
 *
 * A cluster connection is returned typed as `Redis`: ioredis' `Cluster` has the same command
 * methods, scripts and pipelines, and the transport only ever sends commands whose keys share
 * one slot (a stream, its hash-tagged dead-letter stream, one pipeline per stream).
 */
export function createRedisConnection(
  connection: RedisConnectionOptions | undefined,
  role: string,
  overrides: RedisOptions = {},
): Redis {
  const base: RedisOptions = { connectionName: `nrs:${role}`, retryStrategy, lazyConnect: true, ...overrides };
  if (isClusterConnection(connection)) {
    const { clusterOptions = {} } = connection;
    const nodes = connection.cluster.map((node) => (typeof node === 'string' ? redisUrlForIoredis(node) : node));
    const cluster = new Cluster(nodes, {
      clusterRetryStrategy: retryStrategy,
      ...clusterOptions,
      lazyConnect: true,
      // ioredis gives up on a command after this many MOVED/ASK/TRYAGAIN redirections; a
      // failover can take several seconds of them.
      maxRedirections: clusterOptions.maxRedirections ?? 64,
      retryDelayOnFailover: clusterOptions.retryDelayOnFailover ?? 200,
      retryDelayOnClusterDown: clusterOptions.retryDelayOnClusterDown ?? 200,
      redisOptions: { ...clusterOptions.redisOptions, ...base },
    });
    return cluster as unknown as Redis;
  }
  const target = connection ?? defaultRedisUrl();
  return typeof target === 'string' ? new Redis(redisUrlForIoredis(target), base) : new Redis({ ...target, ...base });
}

/** True for a connection made from cluster options. */
export function isCluster(redis: Redis): boolean {
  return (redis as unknown) instanceof Cluster;
}

/** Readable address for messages and logs, without a password (redactUrl). */
export function describeConnection(connection: RedisConnectionOptions | undefined): string {
  if (isClusterConnection(connection)) {
    return `cluster ${connection.cluster.map((n) => (typeof n === 'object' ? `${n.host ?? '127.0.0.1'}:${n.port}` : redactUrl(String(n)))).join(',')}`;
  }
  const target = connection ?? defaultRedisUrl();
  if (typeof target === 'string') return redactUrl(lowerRedisScheme(target));
  return `${target.tls ? 'rediss' : 'redis'}://${target.host ?? '127.0.0.1'}:${target.port ?? 6379}`;
}
