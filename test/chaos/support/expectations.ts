import type { Reconciliation } from './ledger.js';

/**
 * The checks every scenario makes at its end: nothing lost, every event got the outcome its
 * producer asked for, nothing left pending, and (with the idempotency guard) no effect twice.
 */
export function expectNoLoss(r: Reconciliation, options: { idempotent?: boolean } = {}): void {
  for (const g of r.groups) {
    expect({ group: g.group, lost: g.missing.slice(0, 10), lostCount: g.missing.length }).toEqual({
      group: g.group,
      lost: [],
      lostCount: 0,
    });
    expect({ group: g.group, wrongOutcome: g.wrongOutcome.slice(0, 10) }).toEqual({ group: g.group, wrongOutcome: [] });
    expect({ group: g.group, pending: g.pending, parkedTwice: g.parkedTwice, auditedLoss: g.auditedLoss }).toEqual({
      group: g.group,
      pending: 0,
      parkedTwice: [],
      auditedLoss: 0,
    });
    if (options.idempotent !== false)
      expect({ group: g.group, dupEffects: g.dupEffects }).toEqual({ group: g.group, dupEffects: 0 });
  }
  expect(r.produced.size).toBeGreaterThan(0);
}
