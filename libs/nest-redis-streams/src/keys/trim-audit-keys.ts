import { hasHashTag } from './slots.js';

/** Suffix of the hash remembering which losses of a stream were reported, per group. */
const AUDIT_SUFFIX = ':trim-audit';

/**
 * The audit hash of a stream: `<stream>:trim-audit`, or `{<stream>}:trim-audit` for a stream
 * without a hash tag, so that it always hashes to the stream's slot (the audit script touches
 * the stream, its dead-letter stream and this hash, and a script's keys must share a slot). Per
 * source stream, not per dead-letter stream: streams and partitions that shared a dead-letter
 * stream overwrote each other's counters and wrote the same loss again every round.
 */
export function trimAuditKey(stream: string): string {
  return hasHashTag(stream) ? `${stream}${AUDIT_SUFFIX}` : `{${stream}}${AUDIT_SUFFIX}`;
}

/** The audit hash earlier versions kept beside the dead-letter stream (`<dlq>:trim-audit`). */
export function legacyTrimAuditKey(deadLetterStream: string): string {
  return `${deadLetterStream}${AUDIT_SUFFIX}`;
}
