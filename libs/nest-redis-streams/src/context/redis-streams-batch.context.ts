import { BaseRpcContext } from '@nestjs/microservices';
import type { BatchControl } from './batch-control.interface.js';
import type { RedisStreamsContext } from './redis-streams.context.js';

type RedisStreamsBatchContextArgs = [
  stream: string,
  group: string,
  consumer: string,
  entries: readonly RedisStreamsContext[],
  control: BatchControl,
];

/** Thrown by `fail()` for an index or id that is not in the batch, or after the handler finished. */
const failError = (message: string) => new RangeError(message);

/**
 * The context of a batch handler (`@Ctx()` with `batch` in the handler's options): one
 * `RedisStreamsContext` per entry, in the order of the `@Payload()` array, and `fail()` to
 * report entries that did not succeed. Entries not failed are acked when the handler resolves;
 * if it throws, none is.
 */
export class RedisStreamsBatchContext extends BaseRpcContext<RedisStreamsBatchContextArgs> {
  private ids: Map<string, number> | null = null;

  /** Stream key the entries were read from. */
  getStream(): string {
    return this.args[0];
  }
  /** Consumer group reading the entries. */
  getGroup(): string {
    return this.args[1];
  }
  /** This instance's consumer name. */
  getConsumer(): string {
    return this.args[2];
  }
  /** Number of entries (and payloads) in the batch. */
  getSize(): number {
    return this.args[3].length;
  }
  /**
   * Each entry's own context (id, delivery count, event id, headers, abort signal), index-aligned
   * with the payload array. Pass one to `runOnce()` or `inbox.run()` to guard that entry.
   */
  getEntries(): readonly RedisStreamsContext[] {
    return this.args[3];
  }
  /** The context of the entry at `index` of the payload array. */
  getEntry(index: number): RedisStreamsContext {
    return this.args[3][this.indexOf(index)];
  }

  /**
   * Reports one entry as failed, by its index in the payload array or its entry id: it is not
   * acked, but retried with its own delivery count and back-off, and dead-lettered after
   * `maxDeliveries` (at once for a `NonRetryableError`). The other entries are acked when the
   * handler resolves. Calling it again for the same entry keeps the last error.
   */
  fail(entry: number | string, error: unknown = new Error('Failed by the batch handler.')): void {
    const control = this.args[4];
    if (control.closed) throw failError(BATCH_CONTEXT_MESSAGES.alreadySettled(entry));
    control.fail(this.indexOf(entry), error);
  }

  private indexOf(entry: number | string): number {
    const entries = this.args[3];
    if (typeof entry === 'number') {
      if (Number.isInteger(entry) && entry >= 0 && entry < entries.length) return entry;
      throw failError(BATCH_CONTEXT_MESSAGES.unknownEntry(entry, entries.length));
    }
    this.ids ??= new Map(entries.map((ctx, i) => [ctx.getEntryId(), i]));
    const index = this.ids.get(entry);
    if (index === undefined) throw failError(BATCH_CONTEXT_MESSAGES.unknownEntry(entry, entries.length));
    return index;
  }
}

const BATCH_CONTEXT_MESSAGES = {
  unknownEntry: (which: number | string, size: number) =>
    `The batch has no entry ${JSON.stringify(which)}. Pass an index from 0 to ${size - 1} (the position in the ` +
    'payload array) or the id of one of its entries (getEntries()[i].getEntryId()).',
  alreadySettled: (which: number | string) =>
    `batch.fail(${JSON.stringify(which)}) was called after the batch handler finished: its entries are settled ` +
    'already. Call fail() before the handler returns, or throw to retry the whole batch.',
};
