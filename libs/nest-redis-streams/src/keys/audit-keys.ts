/** The audit stream of console and CLI writes when the options name none. */
export const DEFAULT_AUDIT_STREAM = 'nrs:console:audit';

/** The stream of refused requests beside an audit stream: `<auditStream>:refused`. */
export function auditRefusalStream(auditStream: string): string {
  return `${auditStream}:refused`;
}

/** The console's chart history beside an audit stream: `<auditStream>:history`, inside the operators' ACL pattern. */
export function groupHistoryKey(auditStream: string): string {
  return `${auditStream}:history`;
}

/** The state of one canary re-drive run: `<auditStream>:canary:<runId>` (a hash), beside the audit. */
export function canaryRunKey(auditStream: string, runId: string): string {
  return `${auditStream}:canary:${runId}`;
}

/**
 * Which run of a failure group's canary on a stream is live, its lease and the dead-letter id it
 * reads up to: `<auditStream>:canary-live:<cause>:<stream>` (a hash; the cause is 12 hex digits,
 * so no stream name can make two pairs share a key).
 */
export function canaryClaimKey(auditStream: string, stream: string, cause: string): string {
  return `${auditStream}:canary-live:${cause}:${stream}`;
}
