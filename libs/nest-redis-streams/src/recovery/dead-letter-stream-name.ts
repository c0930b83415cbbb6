import { DEAD_LETTER_SUFFIX } from '../constants.js';
import { hasHashTag } from '../redis/slots.js';

/**
 * `<stream>:dlq`. On a cluster, a stream without a hash tag gets `{<stream>}:dlq`, which hashes
 * like the stream itself: parking an entry (XADD there + XACK here) is one atomic script, and a
 * script's keys must share a slot.
 */
export function defaultDeadLetterStream(stream: string, cluster: boolean): string {
  return cluster && !hasHashTag(stream) ? `{${stream}}${DEAD_LETTER_SUFFIX}` : `${stream}${DEAD_LETTER_SUFFIX}`;
}
