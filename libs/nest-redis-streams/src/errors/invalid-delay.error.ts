/** When an entry is to be delivered: after `delayMs`, or at `deliverAt` (one of the two). */
export interface DeliveryTime {
  /** Milliseconds from now; 0 delivers at once. */
  delayMs?: number;
  /** A moment (a Date or ms since epoch); one in the past delivers at once. */
  deliverAt?: Date | number;
}

/** Longest delay accepted: about 10 years, far past any schedule and well inside a safe integer. */
export const MAX_DELAY_MS = 10 * 365 * 24 * 3_600_000;

/** A delay or delivery time that cannot be scheduled (negative, not a number, both given); nothing was written. */
export class InvalidDelayError extends Error {
  override readonly name = 'InvalidDelayError';
  constructor(
    message: string,
    /** The refused value, as given. */
    readonly value: unknown,
  ) {
    super(message);
  }
}

const shown = (value: unknown) =>
  value instanceof Date ? `Date(${String(value.getTime())})` : (JSON.stringify(value) ?? String(value));

/**
 * The due time (ms since epoch) of `when`, or null to deliver now (no delay, 0, or a time
 * already past). `where` names the call in the error (`emit() to stream "orders"`).
 * @throws InvalidDelayError naming the value and the fix.
 */
export function dueTimeOf(when: DeliveryTime | undefined, where: string, now = Date.now()): number | null {
  if (!when) return null;
  const { delayMs, deliverAt } = when;
  if (delayMs !== undefined && deliverAt !== undefined) {
    throw new InvalidDelayError(
      `${where}: give delayMs or deliverAt, not both (got delayMs ${shown(delayMs)} and deliverAt ${shown(deliverAt)}).`,
      when,
    );
  }
  if (delayMs !== undefined) {
    if (typeof delayMs !== 'number' || !Number.isFinite(delayMs) || delayMs < 0 || delayMs > MAX_DELAY_MS) {
      throw new InvalidDelayError(
        `${where}: delayMs must be a number of milliseconds from 0 to ${MAX_DELAY_MS}, got ${shown(delayMs)}. ` +
          'Pass 0 (or leave it out) to deliver at once.',
        delayMs,
      );
    }
    return delayMs === 0 ? null : now + Math.ceil(delayMs);
  }
  if (deliverAt === undefined) return null;
  const at = deliverAt instanceof Date ? deliverAt.getTime() : deliverAt;
  if (typeof at !== 'number' || !Number.isFinite(at) || at > now + MAX_DELAY_MS) {
    throw new InvalidDelayError(
      `${where}: deliverAt must be a valid Date or milliseconds since epoch within ${MAX_DELAY_MS} ms from now, got ${shown(deliverAt)}. ` +
        'Use new Date(...) with a parseable time, or delayMs.',
      deliverAt,
    );
  }
  return at <= now ? null : Math.ceil(at);
}
