import type { Cluster, Redis } from 'ioredis';
import { isCluster } from '../redis/connection.factory.js';

/** `INFO memory` figures of one Redis node. */
export interface NodeMemory {
  /** `host:port` (or the socket path): never the credentials the connection may carry. */
  node: string;
  /** `used_memory`, bytes. */
  usedBytes: number;
  /** `maxmemory`, bytes; 0 when the node has no limit. */
  maxBytes: number;
}

/**
 * Reads `INFO memory` of the node behind a connection, or of every master of a cluster (each
 * master holds its own slots' streams, so each can fill up on its own; replicas refuse no writes).
 */
export async function readRedisMemory(redis: Redis): Promise<NodeMemory[]> {
  const nodes = isCluster(redis) ? (redis as unknown as Cluster).nodes('master') : [redis];
  return Promise.all(nodes.map(async (node) => parseMemory(nodeName(node), await node.info('memory'))));
}

/** Reads used_memory and maxmemory out of an INFO reply. */
export function parseMemory(node: string, info: string): NodeMemory {
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)\\s*$`, 'm').exec(info)?.[1] ?? Number.NaN);
  return { node, usedBytes: field('used_memory'), maxBytes: field('maxmemory') };
}

function nodeName(redis: Redis): string {
  const { host, port, path } = redis.options;
  return path ? path : `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}
