import { RpcException } from '@nestjs/microservices';
import { dueTimeOf } from './invalid-delay.error.js';

/**
 * Throw from a handler to run the entry again later, at a time the handler chooses (a rate limit's
 * reset, a partner's opening hours), without using a delivery of the retry budget. A delay up to
 * the handler's `minIdleTimeMs` waits in the pending list like a back-off; a longer one moves a
 * copy of the entry (same fields, same event id) to the stream's schedule and acks the original,
 * atomically. An RpcException, so that Nest's exception filters hand it over unchanged.
 *
 * @example
 * ```ts
 * throw new RetryLater(30_000); // in 30 s
 * throw new RetryLater(new Date('2030-01-01T09:00:00Z'));
 * ```
 */
export class RetryLater extends RpcException {
  override readonly name = 'RetryLater';
  /** When to run it again (ms since epoch, this process' clock). */
  readonly retryAt: number;
  /**
   * The delay asked for (ms), null when a Date was given. A copy that goes to the schedule is due
   * this long (less the time since it was thrown) after Redis' clock, whatever this host's clock says.
   */
  readonly delayMs: number | null;

  /**
   * @param when milliseconds from now, or a Date (one in the past retries at once, after no back-off)
   * @throws InvalidDelayError for a negative or non-numeric delay or an invalid Date
   */
  constructor(when: number | Date) {
    const now = Date.now();
    const retryAt = dueTimeOf(when instanceof Date ? { deliverAt: when } : { delayMs: when }, 'RetryLater', now) ?? now;
    const message = `Retry requested at ${new Date(retryAt).toISOString()}.`;
    const delayMs = when instanceof Date ? null : Math.ceil(when);
    super({ status: 'error', message, name: 'RetryLater', retryLater: true, retryAt, delayMs });
    this.message = message;
    this.retryAt = retryAt;
    this.delayMs = delayMs;
  }
}

/** When a RetryLater (or what Nest's RPC filters make of it) asks to run again (ms since epoch); null for other errors. */
export function retryLaterTime(error: unknown): number | null {
  if (error instanceof RetryLater) return error.retryAt;
  if (typeof error !== 'object' || error === null) return null;
  const { retryLater, retryAt } = error as Record<string, unknown>;
  return retryLater === true && typeof retryAt === 'number' && Number.isFinite(retryAt) ? retryAt : null;
}

/**
 * When a RetryLater's copy is due in the schedule: a delay asked for is what is left of it now
 * (`{ inMs }`, counted from Redis' clock where it is stored: this host's clock may be off, and only
 * the time since the throw is measured on it), a Date the time it names (ms since epoch).
 */
export function retryLaterDue(error: unknown, retryAt: number, now = Date.now()): number | { inMs: number } {
  const delayMs = typeof error === 'object' && error !== null ? (error as Record<string, unknown>).delayMs : undefined;
  return typeof delayMs === 'number' && Number.isFinite(delayMs) ? { inMs: Math.max(0, retryAt - now) } : retryAt;
}
