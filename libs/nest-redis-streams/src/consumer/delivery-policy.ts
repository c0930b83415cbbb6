import { DeadLetterReason } from '../dead-letter-reason.js';
import { isDeferral } from '../errors/event-in-progress.error.js';
import { isNonRetryable } from '../errors/non-retryable.error.js';
import { retryLaterTime } from '../errors/retry-later.error.js';
import { UndecodableEntryError } from '../errors/undecodable-entry.error.js';

// The one home of what a delivery count means and of every budget, back-off and park decision.
// Pure: it reads numbers and errors and returns a decision; the callers do the writes.
//
// What a count means: a plain read (XREADGROUP >, a fenced read) counts the delivery in Redis,
// so the entry arrives with its count. A replayed entry (own PEL, `0`) or a reclaimed one
// (XAUTOCLAIM JUSTID, or a CLAIM read whose count is taken back by one) arrives with the count of
// its last delivery, and its delivery is counted in Redis when its handler starts: an entry that
// was only read ahead, or waited here for a slot when the process died, spends nothing.

/** The handler options the policy reads. */
export interface DeliveryBudget {
  /** Deliveries an entry may have; the one past it is parked instead of run. */
  readonly maxDeliveries: number;
  /** The reclaimer's min-idle: a retry's back-off never waits longer. */
  readonly minIdleTimeMs: number;
  /** The first retry's back-off; it doubles with each delivery. */
  readonly retryBackoffMs: number;
}

/** Whether a delivery with this count may still reach the handler. */
export function withinBudget(deliveries: number, budget: Pick<DeliveryBudget, 'maxDeliveries'>): boolean {
  return deliveries <= budget.maxDeliveries;
}

/**
 * A replayed or reclaimed entry starts: the delivery its start counts. The count is written to
 * Redis (a claim that also checks the entry is still ours) only when the entry will run: a
 * trimmed payload or an exhausted budget parks it before the handler, with this count.
 */
export function deliveryOnStart(deliveries: number): number {
  return deliveries + 1;
}

/**
 * An entry a CLAIM read took over (8.4+) arrives counted by the read itself. It is held with the
 * count before that delivery and counted again when it starts, like an XAUTOCLAIM'd entry, which
 * sets the same count again: the start's claim checks that it is still ours.
 */
export function heldCountOfClaimRead(countedByRead: number): number {
  return countedByRead - 1;
}

/** What the hand-back reads of an entry it gives up. */
export interface HandedBackState {
  readonly deliveries: number;
  /** Its handler was called: the delivery it counted happened. */
  readonly invoked: boolean;
  /** Still to be counted when it starts (replayed or reclaimed, see above). */
  readonly countOnStart: boolean;
}

/**
 * The delivery count an entry handed back without its handler having been called gets back in
 * Redis: the count it had before this consumer's delivery, so an entry read ahead, taken over or
 * queued behind its ordering key spends nothing when a shutdown or a hand-over gives it up (-1:
 * keep the count, its handler was called). Held to be counted on start, it holds that count (a
 * CLAIM read's own count was taken back, see heldCountOfClaimRead); otherwise its read or its
 * start counted one, which `deliveries` includes.
 */
export function countOnHandBack(entry: HandedBackState): number {
  if (entry.invoked) return -1;
  return entry.countOnStart ? entry.deliveries : Math.max(0, entry.deliveries - 1);
}

/** Whether a starting replayed/reclaimed entry's count is claimed in Redis (it will reach the handler). */
export function countsInRedisOnStart(
  fields: readonly string[] | null,
  next: number,
  budget: Pick<DeliveryBudget, 'maxDeliveries'>,
): boolean {
  return fields !== null && withinBudget(next, budget);
}

/**
 * Why an entry must not reach its handler, checked before decoding (null: it may run). A payload
 * trimmed away is a tombstone; a delivery past the budget goes to the dead-letter stream.
 */
export function parkBeforeRun(
  fields: readonly string[] | null,
  deliveries: number,
  budget: Pick<DeliveryBudget, 'maxDeliveries'>,
): DeadLetterReason.PAYLOAD_TRIMMED | DeadLetterReason.MAX_DELIVERIES | null {
  if (fields === null) return DeadLetterReason.PAYLOAD_TRIMMED;
  return withinBudget(deliveries, budget) ? null : DeadLetterReason.MAX_DELIVERIES;
}

/** An entry that cannot be decoded is poison at once: parked without retries, with this reason. */
export function undecodableReason(error: unknown): DeadLetterReason {
  return error instanceof UndecodableEntryError ? error.reason : DeadLetterReason.UNDECODABLE;
}

/** What the policy knows of a failed entry. */
export interface FailedEntryState {
  readonly deliveries: number;
  /** The handler acked it itself before failing (manual ack). */
  readonly acked: boolean;
  /** Another consumer owns it now. */
  readonly lost: boolean;
  /** Its payload was trimmed while it was held (Redis dropped it from the PEL). */
  readonly trimmed: boolean;
}

/**
 * What to do with an entry whose handler failed:
 * - `keep-ack`: it was acked by the handler; the ack stands (nothing is written);
 * - `lost`: it is not this consumer's any more (nothing is written);
 * - `park`: to the dead-letter stream with `reason`; `requireOwner` false for a payload trimmed
 *   while held (Redis dropped it from the PEL, so no owner is left to check);
 * - `retry`: set its idle time to `idleMs` (the reclaimer retries it once idle past min-idle, so
 *   after the back-off) and, when `retryCount` is not -1, its delivery count to it;
 * - `reschedule`: the handler asked (RetryLater) for a retry later than min-idle, which no idle
 *   time can express (XCLAIM cannot set one in the future): a copy goes to the stream's schedule
 *   for `retryAt` and the entry is acked, in one script.
 */
export type FailureDecision =
  | { readonly action: 'keep-ack' }
  | { readonly action: 'lost' }
  | { readonly action: 'park'; readonly reason: DeadLetterReason; readonly requireOwner: boolean }
  | { readonly action: 'retry'; readonly idleMs: number; readonly retryCount: number; readonly backoffMs: number }
  | { readonly action: 'reschedule'; readonly retryAt: number };

const KEEP_ACK: FailureDecision = { action: 'keep-ack' };
const LOST: FailureDecision = { action: 'lost' };
/** A payload trimmed away while held: parked with the fields held here, no owner to check. */
export const PARK_TRIMMED = { action: 'park', reason: DeadLetterReason.PAYLOAD_TRIMMED, requireOwner: false } as const;
const PARK_NON_RETRYABLE: FailureDecision = { action: 'park', reason: DeadLetterReason.NON_RETRYABLE, requireOwner: true };
const PARK_EXHAUSTED: FailureDecision = { action: 'park', reason: DeadLetterReason.MAX_DELIVERIES, requireOwner: true };

/** The decision for a failed handler run; see FailureDecision. */
export function onFailure(entry: FailedEntryState, error: unknown, budget: DeliveryBudget, now = Date.now()): FailureDecision {
  // The handler acknowledged the entry itself (manual ack) and failed afterwards: its ack
  // stands. A retry or a dead letter would run acknowledged work again (a re-drive would
  // duplicate it), and parking would race the ack and report a reclaim that never happened.
  if (entry.acked) return KEEP_ACK;
  if (entry.lost) return LOST;
  if (entry.trimmed) return PARK_TRIMMED;
  if (isNonRetryable(error)) return PARK_NON_RETRYABLE;
  const retryAt = retryLaterTime(error);
  if (retryAt !== null) return retryLater(entry, retryAt - now, retryAt, budget);
  // A deferral (the event is being handled elsewhere) is not an attempt: the delivery count is
  // set back so that the next claim restores it, and no retry budget is used.
  const deferred = isDeferral(error);
  if (!deferred && !withinBudget(entry.deliveries + 1, budget)) return PARK_EXHAUSTED;
  const backoffMs = retryBackoff(entry.deliveries, deferred, budget);
  // Backdate the idle time so the reclaimer retries after the backoff, not at once and not
  // only after a full min-idle (Redis caps delivery times at "now", so min-idle is the cap).
  const retryCount = deferred ? Math.max(0, entry.deliveries - 1) : -1;
  return { action: 'retry', idleMs: budget.minIdleTimeMs - backoffMs, retryCount, backoffMs };
}

/**
 * The wait before a failed entry is retried: the first back-off doubled with each delivery
 * (a deferral always waits the first one), never longer than min-idle.
 */
export function retryBackoff(deliveries: number, deferred: boolean, budget: DeliveryBudget): number {
  return Math.min(budget.minIdleTimeMs, budget.retryBackoffMs * (deferred ? 1 : 2 ** (deliveries - 1)));
}

/**
 * A retry the handler asked for (RetryLater): no delivery of the budget is used, as with a
 * deferral (the count is set back, and the next start restores it). Up to min-idle it waits in
 * the PEL like a back-off; longer, in the stream's schedule.
 */
function retryLater(entry: FailedEntryState, delayMs: number, retryAt: number, budget: DeliveryBudget): FailureDecision {
  if (delayMs > budget.minIdleTimeMs) return { action: 'reschedule', retryAt };
  // Whole milliseconds, never earlier than asked: XCLAIM's IDLE refuses a fraction ("Invalid IDLE
  // option argument"), and an RPC-shaped RetryLater can carry any number.
  const backoffMs = Math.max(0, Math.ceil(delayMs));
  return { action: 'retry', idleMs: budget.minIdleTimeMs - backoffMs, retryCount: Math.max(0, entry.deliveries - 1), backoffMs };
}
