/**
 * Stream key of one partition of a logical stream: `orders:{3}`. The braces make the partition
 * number the Redis Cluster hash tag, so partitions spread over shards while each partition's
 * dead-letter stream (`orders:{3}:dlq`) stays on the same shard as the partition itself.
 */
export function partitionStream(stream: string, partition: number): string {
  return `${stream}:{${partition}}`;
}

/** All stream keys of a logical stream with `partitions` partitions (1 = the stream itself). */
export function partitionStreams(stream: string, partitions: number): string[] {
  if (partitions <= 1) return [stream];
  return Array.from({ length: partitions }, (_, i) => partitionStream(stream, i));
}

/**
 * Partition of a key: FNV-1a over its UTF-16 code units, so every producer and consumer in any
 * language maps a key to the same partition without coordination.
 */
export function partitionOf(key: string, partitions: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % partitions;
}
