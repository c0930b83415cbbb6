import type { ClusterNode, ClusterOptions, RedisOptions } from 'ioredis';

/** A Redis Cluster: seed nodes plus ioredis cluster options. */
export interface ClusterConnectionOptions {
  /** Some nodes of the cluster; the others are discovered. */
  cluster: ClusterNode[];
  /** ioredis `ClusterOptions` (e.g. `redisOptions: { password }`, `scaleReads`). */
  clusterOptions?: ClusterOptions;
}

/**
 * How to reach Redis: a `redis://` URL, ioredis options, or a cluster. The transport opens its own
 * connections from it (one blocking reader per stream and group, one for commands).
 */
export type RedisConnectionOptions = string | RedisOptions | ClusterConnectionOptions;
