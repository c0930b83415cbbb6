import type { Redis } from 'ioredis';
import { isDeadLetterStream } from '../keys/index.js';
import { isCluster } from '../redis/connection.factory.js';
import { pairsToObject } from '../redis/replies.js';
import { OPERATIONS_DEFAULTS } from './operations.constants.js';

/** A stream, its length and the names of its consumer groups. */
export interface DiscoveredStream {
  stream: string;
  /** Entries in the stream (XLEN); 0 for a stream that does not exist. */
  length: number;
  groups: string[];
  /** Per group (same order): XINFO GROUPS `entries-read` (Redis 7.0+), null where unknown. */
  entriesRead: Array<number | null>;
}

/**
 * Every key of type stream (SCAN ... TYPE stream on each master of a cluster), without dead-letter
 * streams and the names in `exclude` (the audit stream). SCAN walks the keyspace in many small
 * calls, so it never blocks Redis; on a keyspace with millions of keys, configure the streams
 * instead of discovering them.
 */
export async function scanStreams(redis: Redis, exclude: readonly string[] = []): Promise<string[]> {
  const nodes = isCluster(redis) ? (redis as unknown as { nodes(role: 'master'): Redis[] }).nodes('master') : [redis];
  const found = new Set<string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'COUNT', OPERATIONS_DEFAULTS.scanCount, 'TYPE', 'stream');
      for (const key of keys) found.add(key);
      cursor = next;
    } while (cursor !== '0');
  }
  return [...found].filter((key) => !isDeadLetterStream(key) && !exclude.includes(key)).sort();
}

/**
 * The length and groups of each stream: XLEN and XINFO GROUPS per stream in a single pipeline (one
 * per stream in a cluster, in parallel). A stream that does not exist has length 0 and no groups.
 */
export async function readStreamGroups(redis: Redis, streams: readonly string[]): Promise<DiscoveredStream[]> {
  if (streams.length === 0) return [];
  const batches = isCluster(redis) ? streams.map((s) => [s]) : [streams];
  const replies = await Promise.all(
    batches.map(async (batch) => {
      const pipeline = redis.pipeline();
      for (const stream of batch) pipeline.xlen(stream).xinfo('GROUPS', stream);
      return (await pipeline.exec()) ?? [];
    }),
  );
  const flat = replies.flat();
  return streams.map((stream, i) => {
    const [[lenErr, length], [groupsErr, rows]] = [flat[2 * i] ?? [null, 0], flat[2 * i + 1] ?? [null, []]];
    const groups = groupsErr ? [] : (rows as unknown[][]).map((row) => pairsToObject(row));
    return {
      stream,
      length: lenErr ? 0 : Number(length),
      groups: groups.map((g) => String(g.name)),
      entriesRead: groups.map((g) =>
        g['entries-read'] === undefined || g['entries-read'] === null ? null : Number(g['entries-read']),
      ),
    };
  });
}
