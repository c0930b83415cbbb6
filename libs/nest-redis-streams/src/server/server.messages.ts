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
  badOnDeadLetter: (value: unknown, where: string) =>
    `Option "onDeadLetter" must be "continue" or "block-key"${where}, got ${JSON.stringify(value)}.`,
  blockKeyNeedsOrderingKey: (where: string) =>
    `Option onDeadLetter: 'block-key'${where} needs an orderingKey: it holds the later entries of the parked entry's ` +
    "key, and without one there is no key. Give this handler an orderingKey, or onDeadLetter: 'continue' " +
    '(batch handlers cannot have either: a batch has no per-key order).',
  blockKeyManualAck: (where: string) =>
    `Option onDeadLetter: 'block-key'${where} cannot be combined with ackMode: 'manual': the key's next entry is ` +
    "released by the ack of the entry that blocked it, in one script. Use ackMode: 'auto' on this handler.",
  watchedAckRefused: (user: string, cause: string) =>
    `Redis refused the cheap ack's WATCH / MULTI / EXEC to user "${user}" (${cause}). Acks still work, through ` +
    `the ack script, which costs Redis about twice the CPU; to allow the cheap way: ACL SETUSER ${user} +watch +unwatch +multi +exec.`,
  replyWriteFailed: (replyTo: string, cause: string) => `Could not write the reply to "${replyTo}": ${cause}`,
};
