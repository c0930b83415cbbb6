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

/** Connection states in which a command would wait for a reconnect instead of being answered. */
const UNREACHABLE = new Set(['reconnecting', 'close', 'end']);

/**
 * Reads `INFO memory` of the node behind a connection, or of every master of a cluster (each
 * master holds its own slots' streams, so each can fill up on its own; replicas refuse no writes).
 *
 * ioredis updates its list of masters only when a command is redirected or fails, so after a
 * failover it may still call the promoted replica a replica. The cluster's own slot map (CLUSTER
 * SLOTS, one command) is therefore compared with the client's, which is re-read when they differ.
 */
export async function readRedisMemory(redis: Redis): Promise<NodeMemory[]> {
  if (!isCluster(redis)) return [parseMemory(nodeName(redis), await redis.info('memory'))];
  const cluster = redis as unknown as Cluster;
  if (await mastersChanged(cluster)) await refreshSlots(cluster);
  // A master that cannot be reached (until a replica takes over) never holds back the others' figures.
  const masters = cluster.nodes('master').filter((node) => !UNREACHABLE.has(node.status));
  if (masters.length === 0) throw new Error('no master of the Redis Cluster is reachable');
  return Promise.all(masters.map(async (node) => parseMemory(nodeName(node), await node.info('memory'))));
}

/** True when the masters CLUSTER SLOTS names are not the masters the client knows. */
async function mastersChanged(cluster: Cluster): Promise<boolean> {
  const known = cluster.nodes('master');
  if (known.some((node) => UNREACHABLE.has(node.status))) return true;
  // Behind a NAT map the cluster's addresses are not the client's: trust the client's view there.
  if (cluster.options.natMap || known.length === 0) return false;
  const slots = (await known[0].cluster('SLOTS')) as unknown as Array<[number, number, [string, number]]>;
  const named = new Set(slots.map(([, , [host, port]]) => `${host}:${port}`));
  const knownNames = new Set(known.map(nodeName));
  return named.size !== knownNames.size || [...named].some((name) => !knownNames.has(name));
}

/** Reads used_memory and maxmemory out of an INFO reply. */
export function parseMemory(node: string, info: string): NodeMemory {
  const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)\\s*$`, 'm').exec(info)?.[1] ?? Number.NaN);
  return { node, usedBytes: field('used_memory'), maxBytes: field('maxmemory') };
}

/** Re-reads the cluster's slot map; a failure keeps the old map (the reachable masters are still read). */
function refreshSlots(cluster: Cluster): Promise<void> {
  return new Promise((resolve) => cluster.refreshSlotsCache(() => resolve()));
}

function nodeName(redis: Redis): string {
  const { host, port, path } = redis.options;
  return path ? path : `${host ?? '127.0.0.1'}:${port ?? 6379}`;
}
