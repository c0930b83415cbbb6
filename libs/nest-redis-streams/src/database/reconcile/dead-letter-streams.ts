import type { Cluster, Redis } from 'ioredis';
import {
  defaultDeadLetterStream,
  partitionDeadLetterPattern,
  partitionOfKey,
  withoutDeadLetterSuffix,
} from '../../keys/index.js';

/**
 * The dead-letter streams that exist for `stream` when its partition count is unknown (the CLI):
 * its own default one, plus every partition dead-letter stream found by SCAN (on each master of
 * a cluster), in partition order. SCAN walks the whole keyspace: fine for a check run now and
 * then, not for a hot path, where `deadLetterStreamsOf` with the known count is free.
 */
export async function findDeadLetterStreams(redis: Redis | Cluster, stream: string, cluster = false): Promise<string[]> {
  const nodes = 'nodes' in redis && typeof redis.nodes === 'function' ? (redis as Cluster).nodes('master') : [redis as Redis];
  const pattern = partitionDeadLetterPattern(stream);
  const found = new Map<number, string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000, 'TYPE', 'stream');
      cursor = next;
      for (const key of keys) {
        const partition = partitionOfKey(withoutDeadLetterSuffix(key));
        if (partition?.stream === stream) found.set(partition.partition, key);
      }
    } while (cursor !== '0');
  }
  const partitions = [...found].sort(([a], [b]) => a - b).map(([, key]) => key);
  return [defaultDeadLetterStream(stream, cluster), ...partitions];
}
