import { DeadLetterReason } from '../dead-letter-reason.js';
import { EventInProgressError } from '../errors/event-in-progress.error.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { RetryLater } from '../errors/retry-later.error.js';
import { UndecodableEntryError } from '../errors/undecodable-entry.error.js';
import {
  type DeliveryBudget,
  type FailureDecision,
  PARK_TRIMMED,
  countsInRedisOnStart,
  deliveryOnStart,
  heldCountOfClaimRead,
  onFailure,
  parkBeforeRun,
  retryBackoff,
  undecodableReason,
  withinBudget,
} from './delivery-policy.js';

const budget: DeliveryBudget = { maxDeliveries: 3, minIdleTimeMs: 30_000, retryBackoffMs: 1_000 };
const fields = ['data', '{}'];

/** Where an entry came from, and the count it is held with before its handler starts. */
interface Arrival {
  name: string;
  /** The count the entry is held with. */
  held: number;
  /** Its delivery is counted when it starts (replayed or reclaimed), not by its read. */
  countOnStart: boolean;
}

/** The count the handler sees, and whether it runs (the policy's answers chained as the engine chains them). */
function startOf(arrival: Arrival, payload: string[] | null, max = budget.maxDeliveries) {
  const deliveries = arrival.countOnStart ? deliveryOnStart(arrival.held) : arrival.held;
  const claims = arrival.countOnStart && countsInRedisOnStart(payload, deliveries, { maxDeliveries: max });
  return { deliveries, claims, park: parkBeforeRun(payload, deliveries, { maxDeliveries: max }) };
}

describe('delivery policy: what a count means before the handler', () => {
  it.each<[Arrival, number, { deliveries: number; claims: boolean; park: DeadLetterReason | null }]>([
    // A plain read counted the delivery in Redis: the entry arrives with it and runs.
    [{ name: 'first read', held: 1, countOnStart: false }, 3, { deliveries: 1, claims: false, park: null }],
    // Own-PEL replay: held with its last count; the start counts one more, in Redis.
    [{ name: 'replay', held: 1, countOnStart: true }, 3, { deliveries: 2, claims: true, park: null }],
    // XAUTOCLAIM JUSTID: counted on start like a replay.
    [{ name: 'reclaim', held: 2, countOnStart: true }, 3, { deliveries: 3, claims: true, park: null }],
    // CLAIM read: counted by the read (3), held with 2, counted again on start: 3 again.
    [{ name: 'CLAIM read', held: heldCountOfClaimRead(3), countOnStart: true }, 3, { deliveries: 3, claims: true, park: null }],
    // The last allowed delivery runs.
    [{ name: 'last allowed (read)', held: 3, countOnStart: false }, 3, { deliveries: 3, claims: false, park: null }],
    // One past the budget: parked before the handler, with no claim for its count.
    [
      { name: 'over budget (read)', held: 4, countOnStart: false },
      3,
      { deliveries: 4, claims: false, park: DeadLetterReason.MAX_DELIVERIES },
    ],
    [
      { name: 'over budget (replay)', held: 3, countOnStart: true },
      3,
      { deliveries: 4, claims: false, park: DeadLetterReason.MAX_DELIVERIES },
    ],
    // maxDeliveries 1: the first read runs, any redelivery is parked.
    [{ name: 'maxDeliveries 1, first read', held: 1, countOnStart: false }, 1, { deliveries: 1, claims: false, park: null }],
    [
      { name: 'maxDeliveries 1, replay', held: 1, countOnStart: true },
      1,
      { deliveries: 2, claims: false, park: DeadLetterReason.MAX_DELIVERIES },
    ],
    // A replay of an entry read but never run (a crash before its start): its count was 0.
    [{ name: 'maxDeliveries 1, never started', held: 0, countOnStart: true }, 1, { deliveries: 1, claims: true, park: null }],
  ])('%o with maxDeliveries %i', (arrival, max, expected) => {
    expect(startOf(arrival, fields, max)).toEqual(expected);
  });

  it('a trimmed payload is a tombstone, whatever its count, and its start claims nothing', () => {
    for (const arrival of [
      { name: 'read', held: 1, countOnStart: false },
      { name: 'replay', held: 1, countOnStart: true },
      { name: 'over budget', held: 9, countOnStart: true },
    ]) {
      expect(startOf(arrival, null)).toMatchObject({ claims: false, park: DeadLetterReason.PAYLOAD_TRIMMED });
    }
  });

  it('withinBudget is "deliveries <= maxDeliveries"', () => {
    expect([0, 1, 2, 3, 4].map((d) => withinBudget(d, budget))).toEqual([true, true, true, true, false]);
  });

  it('an undecodable entry is parked at once, with the reason its error carries', () => {
    class BadEventId extends UndecodableEntryError {
      override readonly reason = DeadLetterReason.UNDECODABLE_EVENT_ID;
    }
    expect(undecodableReason(new SyntaxError('Unexpected token'))).toBe(DeadLetterReason.UNDECODABLE);
    expect(undecodableReason(new UndecodableEntryError('bad'))).toBe(DeadLetterReason.UNDECODABLE);
    expect(undecodableReason(new BadEventId('bad id'))).toBe(DeadLetterReason.UNDECODABLE_EVENT_ID);
    expect(undecodableReason('not even an error')).toBe(DeadLetterReason.UNDECODABLE);
  });
});

describe('delivery policy: after a failed handler', () => {
  const state = { deliveries: 1, acked: false, lost: false, trimmed: false };
  const failed = new Error('boom');
  const retry = (deliveries: number, backoffMs: number, retryCount = -1): FailureDecision => ({
    action: 'retry',
    idleMs: budget.minIdleTimeMs - backoffMs,
    retryCount,
    backoffMs,
  });
  const park = (reason: DeadLetterReason, requireOwner = true): FailureDecision => ({ action: 'park', reason, requireOwner });

  it.each<[string, Partial<typeof state>, unknown, FailureDecision]>([
    ['acked by the handler, then failed: the ack stands', { acked: true, deliveries: 3 }, failed, { action: 'keep-ack' }],
    ['acked wins over lost and trimmed', { acked: true, lost: true, trimmed: true }, failed, { action: 'keep-ack' }],
    ['lost: nothing is written', { lost: true, deliveries: 3 }, new NonRetryableError('x'), { action: 'lost' }],
    [
      'trimmed while held: parked without an owner check',
      { trimmed: true },
      failed,
      park(DeadLetterReason.PAYLOAD_TRIMMED, false),
    ],
    ['NonRetryableError on the first delivery', {}, new NonRetryableError('never valid'), park(DeadLetterReason.NON_RETRYABLE)],
    ['first failure: the first back-off', { deliveries: 1 }, failed, retry(1, 1_000)],
    ['second failure: doubled', { deliveries: 2 }, failed, retry(2, 2_000)],
    ['last allowed delivery failed: parked', { deliveries: 3 }, failed, park(DeadLetterReason.MAX_DELIVERIES)],
    ['past the budget (counted elsewhere): parked', { deliveries: 7 }, failed, park(DeadLetterReason.MAX_DELIVERIES)],
    // A deferral is not an attempt: the count is set back, the first back-off, never parked.
    ['deferral', { deliveries: 2 }, new EventInProgressError('busy'), retry(2, 1_000, 1)],
    ['deferral on the last delivery is not parked', { deliveries: 3 }, new EventInProgressError('busy'), retry(3, 1_000, 2)],
    [
      'deferral of a count 0 entry sets no negative count',
      { deliveries: 0 },
      new EventInProgressError('busy'),
      retry(0, 1_000, 0),
    ],
  ])('%s', (_name, patch, error, expected) => {
    expect(onFailure({ ...state, ...patch }, error, budget)).toEqual(expected);
  });

  it('maxDeliveries 1: the first failure parks', () => {
    expect(onFailure(state, failed, { ...budget, maxDeliveries: 1 })).toEqual(park(DeadLetterReason.MAX_DELIVERIES));
  });

  it('the back-off doubles with each delivery and is capped at min-idle', () => {
    const wide = { maxDeliveries: 100, minIdleTimeMs: 10_000, retryBackoffMs: 1_000 };
    expect([1, 2, 3, 4, 5, 6].map((d) => retryBackoff(d, false, wide))).toEqual([1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
    expect([1, 5, 9].map((d) => retryBackoff(d, true, wide))).toEqual([1_000, 1_000, 1_000]);
    // Capped: the idle it writes is never negative, so the reclaimer retries it at once.
    const capped = onFailure({ ...state, deliveries: 8 }, failed, wide);
    expect(capped).toEqual({ action: 'retry', idleMs: 0, retryCount: -1, backoffMs: 10_000 });
  });

  it('a back-off longer than min-idle waits min-idle', () => {
    expect(retryBackoff(1, false, { ...budget, retryBackoffMs: 60_000 })).toBe(budget.minIdleTimeMs);
  });

  it('PARK_TRIMMED is the trimmed-payload decision', () => {
    expect(PARK_TRIMMED).toEqual(park(DeadLetterReason.PAYLOAD_TRIMMED, false));
  });
});

describe('RetryLater decisions', () => {
  const entry = (deliveries: number) => ({ deliveries, acked: false, lost: false, trimmed: false });
  const now = Date.now();

  it('a delay up to min-idle waits in the PEL with the count set back, even past the budget', () => {
    const error = new RetryLater(5_000);
    expect(onFailure(entry(3), error, budget, now)).toEqual({
      action: 'retry',
      idleMs: budget.minIdleTimeMs - (error.retryAt - now),
      retryCount: 2,
      backoffMs: error.retryAt - now,
    });
    expect(onFailure(entry(1), error, budget, now)).toMatchObject({ action: 'retry', retryCount: 0 });
  });

  it('a delay past min-idle goes to the schedule', () => {
    const error = new RetryLater(budget.minIdleTimeMs + 1);
    expect(onFailure(entry(1), error, budget, now)).toEqual({ action: 'reschedule', retryAt: error.retryAt });
  });

  it("reads what Nest's RPC filters make of it (the plain error object)", () => {
    const plain = new RetryLater(60_000).getError() as object;
    expect(onFailure(entry(1), plain, budget, now)).toMatchObject({ action: 'reschedule' });
  });

  it('a time already past retries at once; acked, lost and trimmed entries keep their own decisions', () => {
    const past = new RetryLater(new Date(Date.now() - 1_000));
    expect(onFailure(entry(1), past, budget, past.retryAt + 5)).toMatchObject({ action: 'retry', backoffMs: 0 });
    expect(onFailure({ ...entry(1), acked: true }, new RetryLater(10), budget, now)).toEqual({ action: 'keep-ack' });
    expect(onFailure({ ...entry(1), lost: true }, new RetryLater(10), budget, now)).toEqual({ action: 'lost' });
    expect(onFailure({ ...entry(1), trimmed: true }, new RetryLater(10), budget, now)).toEqual(PARK_TRIMMED);
  });
});
