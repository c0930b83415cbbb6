// LIBRARY GAP (closed by the trim audit of 4082b7e, kept as a regression test), found by chaos
// scenario 10b. Entries that a plain MAXLEN trims before the group ever delivered them vanish
// without a trace: no tombstone, no event, no log. Only pending entries get a payload-trimmed
// tombstone (XAUTOCLAIM / replay return them as deleted). Redis does leave the evidence: the
// group's entries-read (and lag) no longer add up with the stream's entries-added and length.
import { waitFor } from '../../support/helpers.js';
import { scenarioTest } from '../support/chaos-test.js';

scenarioTest('entries trimmed before delivery leave a record of the loss', async (s) => {
  // The consumer creates the group (as the transport does), then is down while MAXLEN trims.
  await (await s.consumer('c0', { RECLAIM_MS: 100 })).kill();
  await s.produced(s.producer('producer', { COUNT: 10, MAXLEN: 4 }));
  await s.consumer('c0', { RECLAIM_MS: 100 });
  const r = await s.settle(['nest'], 20_000, (x) => x.groups[0].processed === 4 && x.groups[0].pending === 0);
  expect(r.groups[0].missing).toHaveLength(6); // e0..e5 trimmed before delivery: gone
  // Before 4082b7e: no record at all.
  await waitFor(async () => (await s.data.xlen(s.dlq)) > 0, 'a record of the loss', 3_000).catch(() => undefined);
  expect(await s.data.xlen(s.dlq)).toBeGreaterThan(0);
}, 60_000);
