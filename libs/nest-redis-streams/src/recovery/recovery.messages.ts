/** Log lines of the recovery work (leases, reclaim, trim audit): full sentences naming the stream and the fix. */
export const RECOVERY_MESSAGES = {
  leaseRenewalFailed: (stream: string, group: string, cause: string) =>
    `Lease renewal on stream "${stream}" group "${group}" failed: ${cause}`,
  leaseExpired: (id: string, maxHandlerMs: number) =>
    `Handler of entry ${id} ran past maxHandlerMs (${maxHandlerMs} ms); its lease expired.`,
  handlerHung: (id: string, stream: string, group: string, runningMs: number, maxHandlerMs: number) =>
    `Handler of entry ${id} of stream "${stream}" (group "${group}") has run ${runningMs} ms, past ` +
    `maxHandlerMs ${maxHandlerMs}: taken for hung. Its lease is no longer renewed and its abort signal fired; ` +
    'another consumer may reclaim the entry once it is idle past minIdleTimeMs. Raise maxHandlerMs if the handler is only slow.',
  reclaimFailed: (stream: string, group: string, cause: string) =>
    `Reclaim of stream "${stream}" group "${group}" failed: ${cause}`,
  beatFailed: (stream: string, group: string, cause: string) =>
    `The heartbeat of stream "${stream}" group "${group}" was not written (its liveness falls back to Redis' idle time): ${cause}`,
  trimmedWhilePending: (stream: string, group: string, deleted: readonly string[]) =>
    `${deleted.length} pending entries of stream "${stream}" group "${group}" had been trimmed away ` +
    `before anyone acked them (${deleted.slice(0, 5).join(', ')}${deleted.length > 5 ? ', ...' : ''}); ` +
    'writing tombstones to the dead-letter stream. Use safe trimming to prevent this.',
  reclaimed: (count: number, stream: string, group: string) =>
    `Reclaimed ${count} idle entries of stream "${stream}" group "${group}".`,
  staleEntriesRead: (group: string, stream: string, offBy: number) =>
    `Group "${group}" of stream "${stream}" had a stale entries-read counter (off by ${offBy}, e.g. after a failover); set right.`,
  trimmedUndelivered: (count: number, stream: string, group: string, deadLetterId: string, dlq: string) =>
    `${count} entries of stream "${stream}" were trimmed away before group "${group}" read them: data lost ` +
    `before any consumer saw it. Tombstone ${deadLetterId} in "${dlq}". Trim with safe retention, or raise MAXLEN above the backlog.`,
  trimAuditFailed: (stream: string, group: string, cause: string) =>
    `Trim audit of stream "${stream}" group "${group}" failed: ${cause}`,
};
