/** Log lines and errors of the consumer pipeline: full sentences naming the stream, the entry and the fix. */
export const SERVER_MESSAGES = {
  shutdownStuck: (limitMs: number) =>
    `Shutdown did not finish within ${limitMs} ms (shutdownTimeoutMs plus a grace period): Redis did not answer. ` +
    'Its connections were dropped; entries not acked stay pending and are delivered again.',
  badOwnership: (value: unknown, where: string) =>
    `Option "ownership" must be "shared" or "exclusive"${where}, got ${JSON.stringify(value)}.`,
  badOwnershipLease: (value: unknown, min: number, where: string) =>
    `Option "ownershipLeaseMs" must be an integer of at least ${min}${where}, got ${JSON.stringify(value)}. ` +
    'Renewals run every third of it, so a shorter lease is lost to one slow round trip or GC pause.',
  replyFenced: (replyTo: string) =>
    `Reply to "${replyTo}" not written: this instance no longer owns the request's partition ` +
    '(exclusive ownership); the new owner runs the request again and answers it.',
  consuming: (streams: ReadonlyArray<{ stream: string; group: string }>, consumer: string) =>
    `Consuming ${streams.map((s) => `"${s.stream}" (group "${s.group}")`).join(', ') || 'no streams'} ` +
    `as consumer "${consumer}".`,
  replyWriteFailed: (replyTo: string, cause: string) => `Could not write the reply to "${replyTo}": ${cause}`,
};
