import type { Cluster, Redis } from 'ioredis';
import { partitionOfKey } from '../../operations/ownership.js';
import { defaultDeadLetterStream } from '../../recovery/dead-letter-stream-name.js';
import { partitionStreams } from '../../server/partitions.js';

const DLQ_SUFFIX = ':dlq';

/**
 * The dead-letter streams of `stream` under the transport's default naming: its own
 * (`orders:dlq`) and, with `partitions` > 1, each partition's (`orders:{orders:3}:dlq`), where a
 * partition's consumers park entries. Pass them to `reconcile`'s `deadLetters.stream`.
 */
export function deadLetterStreamsOf(stream: string, partitions = 1, cluster = false): string[] {
  const own = defaultDeadLetterStream(stream, cluster);
  if (partitions <= 1) return [own];
  return [own, ...partitionStreams(stream, partitions).map((p) => defaultDeadLetterStream(p, cluster))];
}

/** `text` as a literal in a Redis glob pattern. */
function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/**
 * The dead-letter streams that exist for `stream` when its partition count is unknown (the CLI):
 * its own default one, plus every partition dead-letter stream found by SCAN (on each master of
 * a cluster), in partition order. SCAN walks the whole keyspace: fine for a check run now and
 * then, not for a hot path, where `deadLetterStreamsOf` with the known count is free.
 */
export async function findDeadLetterStreams(redis: Redis | Cluster, stream: string, cluster = false): Promise<string[]> {
  const nodes = 'nodes' in redis && typeof redis.nodes === 'function' ? (redis as Cluster).nodes('master') : [redis as Redis];
  const pattern = `${globLiteral(stream)}:{*}${DLQ_SUFFIX}`;
  const found = new Map<number, string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000, 'TYPE', 'stream');
      cursor = next;
      for (const key of keys) {
        const partition = partitionOfKey(key.slice(0, -DLQ_SUFFIX.length));
        if (partition?.stream === stream) found.set(partition.partition, key);
      }
    } while (cursor !== '0');
  }
  const partitions = [...found].sort(([a], [b]) => a - b).map(([, key]) => key);
  return [defaultDeadLetterStream(stream, cluster), ...partitions];
}
