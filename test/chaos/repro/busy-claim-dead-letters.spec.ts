// LIBRARY BUG (fixed in 4082b7e, kept as a regression test). A consumer killed inside a runOnce()
// effect leaves the idempotency claim "processing" for processingTtlMs. Until it expires, every
// redelivery throws EventInProgressError, which the transport counts as a failed delivery like any
// other error; with the defaults' proportions (processingTtlMs 60 s = 2 x minIdleTimeMs 30 s,
// retryBackoffMs 1 s doubling, maxDeliveries 5) the retries run out long before the claim expires,
// so the event is dead-lettered and its effect never applied. Here scaled down (min-idle 1 s, claim
// 3 s) with the same shape: the claim outlives the whole retry budget.
import { waitFor } from '../../support/helpers.js';
import { scenarioTest } from '../support/chaos-test.js';

scenarioTest(
  'an event whose consumer died inside the guarded effect is still processed by another consumer',
  async (s) => {
    const env = { IDEMPOTENT: 1, MIN_IDLE: 1_000, PROCESSING_TTL: 3_000, RETRY_MS: 33, MAX_DELIVERIES: 5, RECLAIM_MS: 50 };
    const [a, b] = await s.consumers(['a', 'b'], env);
    await s.produced(s.producer('producer', { COUNT: 1, CRASH_IN_EFFECT_AT: 0 }));
    await waitFor(() => !a.alive || !b.alive, 'one consumer to die inside the effect');
    const r = await s.settle(['nest'], 20_000);
    // Before 4082b7e: [[e0, 'max-deliveries', 'Event "nest:<id>" is being handled by another delivery ...']].
    expect(r.deadLetters.map((d) => [d.key, d.reason, d.error])).toEqual([]);
    expect(r.groups[0].processed).toBe(1);
  },
  60_000,
);
