/**
 * Stream key of one partition of a logical stream: `orders:{orders:3}`. The hash tag names the
 * stream *and* the partition, so partition 3 of `orders` and partition 3 of `payments` hash to
 * different slots (a tag of the number alone put partition k of every stream on one shard), while
 * the partition's dead-letter stream (`orders:{orders:3}:dlq`) keeps the tag and so its slot.
 * The key still starts with the stream name, so `SCAN MATCH orders:*` and ACL key patterns such as
 * `~orders:*` keep covering the partitions. Braces inside the stream name are left out of the tag
 * (a stray `}` would end it early); a stream name that carries its own `{tag}` keeps every
 * partition on that tag's slot, as Redis always uses the first tag of a key.
 */
export function partitionStream(stream: string, partition: number): string {
  return `${stream}:{${stream.replace(/[{}]/g, '')}:${partition}}`;
}

/**
 * The logical stream of a partition stream key (`orders:{orders:3}` → `orders`, 3); null for a
 * key that is not one (the inverse of `partitionStream`).
 */
export function partitionOfKey(key: string): { stream: string; partition: number } | null {
  const match = /^(.*):\{([^{}]*):(\d+)\}$/.exec(key);
  if (!match || match[1].replace(/[{}]/g, '') !== match[2]) return null;
  return { stream: match[1], partition: Number(match[3]) };
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
