/** User-facing messages of the client: full sentences naming the stream, the value and the fix. */
export const CLIENT_MESSAGES = {
  notConnected:
    'RedisStreamsClient is not connected yet: call connect() (emit() and send() connect on their own) before unwrap().',
  closing: 'RedisStreamsClient is closing: wait for close() to finish before emitting or sending again.',
  payloadTooLarge: (stream: string, bytes: number, max: number) =>
    `The entry for stream "${stream}" is ${bytes} bytes, over maxPayloadBytes (${max}); nothing was written. ` +
    'Store large payloads elsewhere (object storage) and send a reference, or raise the "maxPayloadBytes" option.',
  eventIdOf: (stream: string) => `Nothing was written: the eventId of the entry for stream "${stream}"`,
  serializeFailed: (stream: string, cause: string) =>
    `Could not serialize the data for stream "${stream}" (${cause}); nothing was written. ` +
    'Check the data or the "serializer" option.',
  notConnectedFor: (stream: string, cause: string) => `Could not write to stream "${stream}": ${cause}`,
  offline: (stream: string, where: string, ms: number) =>
    `Redis at ${where} was unreachable for ${ms} ms; nothing was written to stream "${stream}". ` +
    'Start Redis or fix the "connection" option, or raise "offlineTimeoutMs" to wait longer for it to come back.',
  connectionLost: (stream: string, where: string, cause: string) =>
    `The connection to Redis at ${where} broke while writing to stream "${stream}" and did not come back ` +
    `(${cause}). The entry may or may not be stored: emit it again with the same eventId, so consumers ` +
    'can drop the duplicate; raise "maxRetriesPerRequest" to wait through longer outages.',
  outOfMemory: (stream: string, cause: string) =>
    `Redis is out of memory and refused the entry for stream "${stream}" (${cause}); nothing was written. ` +
    'Trim streams (the "retention" option or StreamTrimmer), raise maxmemory, or give Redis more memory.',
  deliveryNotObject: (got: string) =>
    `emit()'s third argument says when to deliver and must be an object, { delayMs } or { deliverAt }, got ${got}; ` +
    "nothing was written. Write client.emit('orders', order, { delayMs: 5000 }).",
  scheduleOf: (stream: string) => `emit() to stream "${stream}"`,
  scheduleInBatch: (index: number) =>
    `Entry #${index} asks for delayed delivery (delayMs or deliverAt), which emitBatch() does not schedule; ` +
    'nothing was written. Emit delayed entries one by one with emit().',
  scheduleInRequest: (stream: string) =>
    `send() to stream "${stream}" cannot be delayed (delayMs or deliverAt): a request is answered while the caller ` +
    'waits. Use emit() for delayed delivery.',
  batchNotArray: (got: string) =>
    `emitBatch() takes an array of payloads (plain values or StreamRecords), got ${got}. ` +
    "Pass one array, e.g. client.emitBatch('orders', orders); for a single entry use emit().",
  batchEntryNil: (index: number, value: null | undefined) =>
    `Entry #${index} is ${String(value)}: an entry's data cannot be null or undefined (as with emit()). ` +
    'Remove it from the array, or send an explicit value.',
  batchNotEncoded: (stream: string, failed: number, total: number, list: string) =>
    `${failed} of ${total} entries for stream "${stream}" could not be encoded, so nothing was written: ${list}. ` +
    'Fix or remove those entries (error.failures gives their indexes) and emit the batch again.',
  batchNotStored: (stream: string, failed: number, total: number, list: string) =>
    `${failed} of ${total} entries for stream "${stream}" were not stored: ${list}. ` +
    (failed < total ? `The other ${total - failed} were (their ids are in error.ids). ` : '') +
    'Emit the failed entries again (error.failures gives their indexes), with the same eventId where ' +
    'maybeStored is true, so consumers can drop duplicates.',
  rejected: (stream: string, cause: string) => `Redis rejected the entry for stream "${stream}" (${cause}); nothing was written.`,
  noMessageHandler: (stream: string) =>
    `There is no matching message handler defined in the remote service: no consumer group reads stream ` +
    `"${stream}", so no @MessagePattern handler can answer; nothing was written. Start the service that ` +
    'handles it, or check the pattern and the keyPrefix.',
  requestTimeout: (stream: string, ms: number) =>
    `No reply to the request on stream "${stream}" within ${ms} ms. Either no @MessagePattern handler is ` +
    'consuming that stream right now (requests nobody reads are never answered), or the handler is slower ' +
    'than the "requestTimeoutMs" option: start the service or raise the option. The request may still be handled.',
  closedBeforeReply: (stream: string) =>
    `RedisStreamsClient was closed before the reply to the request on stream "${stream}" arrived; ` +
    'the request may still be handled.',
  emptyError: 'The handler failed with an empty error value (null, 0 or an empty string).',
  replyStreamLost: (stream: string) =>
    `Reply stream "${stream}" was gone (it expired while Redis was unreachable, or Redis lost its data) and ` +
    'was created again; requests sent before may time out.',
  replyReadFailed: (stream: string, cause: string, delayMs: number) =>
    `Reading reply stream "${stream}" failed (${cause}); retrying in ${delayMs} ms.`,
  replyRenewFailed: (stream: string, cause: string) =>
    `Could not renew the expiry of reply stream "${stream}" (${cause}); trying again soon.`,
  replyStreamNotDeleted: (stream: string, cause: string) =>
    `Could not delete reply stream "${stream}" on close (${cause}); it expires on its own.`,
  replyCleanupFailed: (stream: string, cause: string) =>
    `Could not delete read replies from "${stream}" (${cause}); the next read deletes them.`,
  replyUndecodable: (stream: string, id: string, cause: string) =>
    `Reply ${id} in "${stream}" could not be decoded (${cause}); its request will time out.`,
};
