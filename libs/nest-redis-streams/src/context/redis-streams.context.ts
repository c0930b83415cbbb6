import { BaseRpcContext } from '@nestjs/microservices';
import { RetryLater } from '../errors/retry-later.error.js';
import type { EntryControl } from './entry-control.interface.js';

type RedisStreamsContextArgs = [
  stream: string,
  entryId: string,
  group: string,
  consumer: string,
  deliveryCount: number,
  headers: Record<string, string>,
  eventId: string | undefined,
  control: EntryControl,
];

/** Where an entry came from and what the handler may do with it (`@Ctx()`). */
export class RedisStreamsContext extends BaseRpcContext<RedisStreamsContextArgs> {
  /** Stream key the entry was read from. */
  getStream(): string {
    return this.args[0];
  }
  /** Redis entry id (`<ms>-<seq>`): a tracing coordinate, not a dedup key. */
  getEntryId(): string {
    return this.args[1];
  }
  /** Consumer group reading the entry. */
  getGroup(): string {
    return this.args[2];
  }
  /** This instance's consumer name. */
  getConsumer(): string {
    return this.args[3];
  }
  /** How many times the entry has been delivered, this time included (1 on first delivery). */
  getDeliveryCount(): number {
    return this.args[4];
  }
  /** Headers written by the producer (trace context, tenant...). Empty for foreign entries. */
  getHeaders(): Record<string, string> {
    return this.args[5];
  }
  /** Business event id from the envelope: the key for idempotency. */
  getEventId(): string | undefined {
    return this.args[6];
  }
  /** Aborted when this consumer lost the entry to another consumer (its lease was taken over). */
  getSignal(): AbortSignal {
    return this.args[7].signal;
  }
  /**
   * Acknowledges the entry now (manual ack mode). Resolves false when this consumer no longer
   * owns it (another consumer reclaimed it), in which case nothing was acknowledged.
   */
  ack(): Promise<boolean> {
    return this.args[7].ack();
  }

  /**
   * Ends the handler and runs the entry again after `when` (ms from now, or a Date) without using a
   * delivery of the retry budget: throws a RetryLater, so nothing after it runs. See RetryLater.
   * @throws RetryLater always; InvalidDelayError for a negative or non-numeric delay
   */
  retryLater(when: number | Date): never {
    throw new RetryLater(when);
  }
}
