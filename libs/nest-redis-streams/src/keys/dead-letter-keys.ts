import { partitionStreams } from './partition-keys.js';
import { hasHashTag } from './slots.js';

/** Suffix of a stream's dead-letter stream when the handler names none. */
export const DEAD_LETTER_SUFFIX = ':dlq';

/**
 * `<stream>:dlq`. On a cluster, a stream without a hash tag gets `{<stream>}:dlq`, which hashes
 * like the stream itself: parking an entry (XADD there + XACK here) is one atomic script, and a
 * script's keys must share a slot.
 */
export function defaultDeadLetterStream(stream: string, cluster: boolean): string {
  return cluster && !hasHashTag(stream) ? `{${stream}}${DEAD_LETTER_SUFFIX}` : `${stream}${DEAD_LETTER_SUFFIX}`;
}

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

/** True for a key named like a dead-letter stream (`…:dlq`). */
export function isDeadLetterStream(key: string): boolean {
  return key.endsWith(DEAD_LETTER_SUFFIX);
}

/** The stream a default-named dead-letter stream belongs to: `orders:dlq` and `{orders}:dlq` → `orders`. */
export function deadLetterSourceStream(deadLetterStream: string): string {
  return deadLetterStream.replace(/:dlq$/, '').replace(/^\{(.*)\}$/, '$1');
}

/** `text` as a literal in a Redis glob pattern. */
function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** SCAN MATCH pattern of the partition dead-letter streams of `stream` (`orders:{*}:dlq`). */
export function partitionDeadLetterPattern(stream: string): string {
  return `${globLiteral(stream)}:{*}${DEAD_LETTER_SUFFIX}`;
}

/** The stream whose dead-letter stream `deadLetterStream` is, by suffix alone (`orders:{orders:3}:dlq` → `orders:{orders:3}`). */
export function withoutDeadLetterSuffix(deadLetterStream: string): string {
  return deadLetterStream.slice(0, -DEAD_LETTER_SUFFIX.length);
}
