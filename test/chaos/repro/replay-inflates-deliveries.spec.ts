// Found by chaos scenario 6. Replaying a consumer's own PEL after a restart with XREADGROUP ... 0
// raised the delivery count of every pending entry, also of those it had only read ahead and
// never handed to a handler. One entry that ends the process therefore dragged its read-ahead
// neighbours past maxDeliveries, and they were parked as "max-deliveries" although no handler ever
// ran on them. The replay now reads the PEL without counting (XPENDING + XRANGE in one script)
// and counts a replayed entry's delivery right before its handler starts: the crashing entry
// still reaches maxDeliveries, its read-ahead neighbours are counted only when they really run.
import { scenarioTest } from '../support/chaos-test.js';
import type { Scenario } from '../support/scenario.js';

async function crashLoop(s: Scenario, env: Record<string, number>) {
  await s.produced(s.producer('producer', { COUNT: 10, EXIT_AT: 0 }));
  // e0 ends the process on deliveries 1, 2 and 3; the orchestrator restarts it under its name.
  for (let run = 1; run <= 3; run++)
    expect(await s.spawn('chaos-consumer', 'pod-1', env).ended()).toEqual({ code: 3, signal: null });
  await s.consumer('pod-1', env);
  const r = await s.settle(['nest'], 20_000);
  const handlerRuns = r.deliveries.get('nest')!;
  return { r, parkedUnrun: r.deadLetters.filter((d) => !handlerRuns.has(d.key)).map((d) => d.key) };
}

const base = { MAX_DELIVERIES: 3, CONCURRENCY: 1, RECLAIM_MS: 0 };

scenarioTest(
  'without read-ahead, an entry that exits the process sends only itself to the dead-letter stream',
  async (s) => {
    const { r, parkedUnrun } = await crashLoop(s, base);
    expect(parkedUnrun).toEqual([]);
    expect(r.deadLetters.map((d) => d.key)).toEqual([`${s.run}-e0`]);
    expect(r.groups[0].processed).toBe(9);
  },
  60_000,
);

scenarioTest(
  'with read-ahead (prefetchCount 16), only the crashing entry is parked; its read-ahead neighbours all run',
  async (s) => {
    const { r, parkedUnrun } = await crashLoop(s, { ...base, PREFETCH: 16 });
    expect(parkedUnrun).toEqual([]);
    expect(r.deadLetters.map((d) => d.key)).toEqual([`${s.run}-e0`]);
    expect(r.groups[0].processed).toBe(9);
  },
  60_000,
);
