/** User-facing messages of batch handlers: full sentences naming the value and the fix. */
export const BATCH_MESSAGES = {
  serverLevel:
    'Option "batch" is a per-handler option: give it in @EventPattern(stream, { batch: { maxSize, maxWaitMs } }) ' +
    'of the handlers that take arrays, not in the RedisStreamsServer options.',
  notAnObject: (value: unknown, where: string) =>
    `Option "batch" must be an object like { maxSize: 500, maxWaitMs: 20 }${where}, got ${JSON.stringify(value)}.`,
  badMaxWait: (value: unknown, where: string) =>
    `Option "batch.maxWaitMs" must be an integer ≥ 0${where}, got ${JSON.stringify(value)}. ` +
    'Use 0 to start a batch with whatever has been read.',
  prefetchTooSmall: (prefetch: number, maxSize: number, where: string) =>
    `Option "prefetchCount" (${prefetch}) is smaller than "batch.maxSize" (${maxSize})${where}: a batch could never ` +
    `fill. Raise prefetchCount to at least ${maxSize} (or leave it unset: a batch handler then holds ` +
    'maxSize × (concurrency + 1) entries), or lower batch.maxSize.',
  manualAck: (where: string) =>
    `Option "ackMode: 'manual'" cannot be combined with "batch"${where}: a batch handler reports failed entries ` +
    "with batch.fail(index, error) and the transport acks the others. Remove ackMode (or set it to 'auto').",
  orderingKey: (where: string) =>
    `Option "orderingKey" cannot be combined with "batch"${where}: a batch hands its entries over in stream order, ` +
    'and with concurrency 1 (the default) batches run one after another, which keeps every key in order. ' +
    'Remove orderingKey, and keep concurrency at 1 where order matters.',
  requestHandler: (stream: string) =>
    `A @MessagePattern handler of stream "${stream}" has the "batch" option: a request needs its own answer, so ` +
    'requests cannot be batched. Use @EventPattern for batch handlers, or remove "batch".',
};
