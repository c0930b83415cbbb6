import { fc } from '../../../../test/support/property-arbitraries.js';
import { DeadLetterReason } from '../dead-letter-reason.js';
import { EventInProgressError } from '../errors/event-in-progress.error.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { countOnHandBack, type DeliveryBudget, onFailure, parkBeforeRun, retryBackoff, withinBudget } from './delivery-policy.js';

// Whatever the counts, options and errors, every decision stays inside the budget: no retry past
// maxDeliveries, no wait past min-idle, and an idle time Redis takes (a whole number from 0 to min-idle).

const positive = fc.oneof(
  fc.integer({ min: 1, max: 100 }),
  fc.integer({ min: 1, max: 2 ** 31 - 1 }),
  fc.constant(Number.MAX_SAFE_INTEGER),
);
const budget: fc.Arbitrary<DeliveryBudget> = fc.record({
  maxDeliveries: positive,
  minIdleTimeMs: positive,
  retryBackoffMs: positive,
});
// A failed entry was delivered at least once; the count can be anything Redis holds after that.
const deliveries = fc.oneof(
  fc.integer({ min: 1, max: 20 }),
  fc.integer({ min: 1, max: 5_000 }),
  fc.constant(Number.MAX_SAFE_INTEGER),
);
const now = fc.integer({ min: 0, max: 8.64e15 });
const error = (at: number) =>
  fc.oneof(
    fc.constant(new Error('boom')),
    fc.constant(new NonRetryableError('no')),
    fc.constant(new EventInProgressError('elsewhere')),
    // What Nest's RPC filters make of a RetryLater: any finite time, early, late or fractional.
    fc
      .oneof(
        fc.integer({ min: -1e9, max: 1e12 }),
        fc.double({ min: -1e12, max: 1e12, noNaN: true }),
        fc.double({ min: 0, max: 1e5, noNaN: true }),
        fc.integer({ min: 0, max: 1e5 }).map((n) => n + 0.5),
      )
      .map((delay) => ({ retryLater: true, retryAt: at + delay })),
    fc.anything(),
  );
// Mostly an entry still ours: acked, lost and trimmed entries end the decision at once.
const rarely = fc.oneof({ arbitrary: fc.constant(false), weight: 5 }, { arbitrary: fc.constant(true), weight: 1 });
const state = fc.record({ deliveries, acked: rarely, lost: rarely, trimmed: rarely });

describe('delivery policy (properties)', () => {
  it('decides within the budget for any failure', () => {
    fc.assert(
      fc.property(
        budget,
        state,
        now.chain((at) => fc.tuple(fc.constant(at), error(at))),
        (b, entry, [at, err]) => {
          const decision = onFailure(entry, err, b, at);
          if (entry.acked) return expect(decision.action).toBe('keep-ack');
          if (entry.lost) return expect(decision.action).toBe('lost');
          if (decision.action === 'park' && decision.reason === DeadLetterReason.MAX_DELIVERIES)
            expect(withinBudget(entry.deliveries + 1, b)).toBe(false);
          if (decision.action === 'retry') {
            // Redis' XCLAIM IDLE takes whole milliseconds; the wait never passes min-idle.
            expect(Number.isSafeInteger(decision.idleMs)).toBe(true);
            expect(Number.isSafeInteger(decision.backoffMs)).toBe(true);
            expect(decision.backoffMs).toBeGreaterThanOrEqual(0);
            expect(decision.backoffMs).toBeLessThanOrEqual(b.minIdleTimeMs);
            expect(decision.idleMs).toBe(b.minIdleTimeMs - decision.backoffMs);
            // A retry that spends a delivery is one the budget still has.
            if (decision.retryCount === -1) expect(withinBudget(entry.deliveries + 1, b)).toBe(true);
            else expect(decision.retryCount).toBe(Math.max(0, entry.deliveries - 1));
          }
          if (decision.action === 'reschedule') expect(Number.isFinite(decision.retryAt)).toBe(true);
        },
      ),
    );
  });

  it('never waits less as deliveries grow, and never past min-idle', () => {
    fc.assert(
      fc.property(budget, deliveries, fc.boolean(), (b, d, deferred) => {
        const wait = retryBackoff(d, deferred, b);
        expect(wait).toBeGreaterThan(0);
        expect(wait).toBeLessThanOrEqual(b.minIdleTimeMs);
        expect(retryBackoff(d + 1, deferred, b)).toBeGreaterThanOrEqual(wait);
      }),
    );
  });

  it('parks before the run exactly when the budget is spent or the payload gone', () => {
    fc.assert(
      fc.property(budget, fc.nat(), fc.option(fc.array(fc.string()), { nil: null }), (b, d, fields) => {
        const reason = parkBeforeRun(fields, d, b);
        if (fields === null) expect(reason).toBe(DeadLetterReason.PAYLOAD_TRIMMED);
        else expect(reason).toBe(d <= b.maxDeliveries ? null : DeadLetterReason.MAX_DELIVERIES);
      }),
    );
  });

  it('hands back a count that never grows and never goes below zero', () => {
    fc.assert(
      fc.property(fc.nat(), fc.boolean(), fc.boolean(), (d, invoked, countOnStart) => {
        const count = countOnHandBack({ deliveries: d, invoked, countOnStart });
        if (invoked) expect(count).toBe(-1);
        else expect(count >= 0 && count <= d).toBe(true);
      }),
    );
  });

  it('keeps the counterexamples as examples', () => {
    const b = { maxDeliveries: 5, minIdleTimeMs: 30_000, retryBackoffMs: 1_000 };
    // Found by the first property: a RetryLater time with a fraction gave XCLAIM a fractional IDLE.
    const decision = onFailure(
      { deliveries: 1, acked: false, lost: false, trimmed: false },
      { retryLater: true, retryAt: 1_000.5 },
      b,
      0,
    );
    expect(decision).toEqual({ action: 'retry', idleMs: 28_999, retryCount: 0, backoffMs: 1_001 });
  });
});
