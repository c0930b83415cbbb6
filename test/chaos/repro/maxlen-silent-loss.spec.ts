// LIBRARY GAP (closed by the trim audit of 4082b7e, kept as a regression test), found by chaos
// scenario 10b. Entries that a plain MAXLEN trims before the group ever delivered them vanish
// without a trace: no tombstone, no event, no log. Only pending entries get a payload-trimmed
// tombstone (XAUTOCLAIM / replay return them as deleted). Redis does leave the evidence: the
// group's entries-read (and lag) no longer add up with the stream's entries-added and length.
// Issue 12 item 4: the record must be exact (one tombstone with the lost count) and must not be
// written again by later audit rounds (a shared audit hash once repeated it every round).
import type { Redis } from 'ioredis';
import { fieldsToObject, waitFor } from '../../support/helpers.js';
import { scenarioTest } from '../support/chaos-test.js';

/** XINFO STREAM calls the data Redis served so far: every audit round runs one (inside its script). */
async function auditRounds(data: Redis): Promise<number> {
  const match = /cmdstat_xinfo\|stream:calls=(\d+)/.exec(await data.info('commandstats'));
  return Number(match?.[1] ?? 0);
}

scenarioTest(
  'entries trimmed before delivery leave one exact record of the loss',
  async (s) => {
    // The consumer creates the group (as the transport does), then is down while MAXLEN trims.
    await (await s.consumer('c0', { RECLAIM_MS: 100 })).kill();
    await s.produced(s.producer('producer', { COUNT: 10, MAXLEN: 4 }));
    await s.consumer('c0', { RECLAIM_MS: 100 });
    const r = await s.settle(['nest'], 20_000, (x) => x.groups[0].processed === 4 && x.groups[0].pending === 0);
    expect(r.groups[0].missing).toHaveLength(6); // e0..e5 trimmed before delivery: gone
    // Before 4082b7e: no record at all.
    await waitFor(async () => (await s.data.xlen(s.dlq)) > 0, 'a record of the loss', 3_000).catch(() => undefined);
    // Let at least ten more audit rounds run (reclaim every 100 ms): none may report it again.
    const before = await auditRounds(s.data);
    await waitFor(async () => (await auditRounds(s.data)) - before >= 10, 'ten more audit rounds', 10_000);
    const letters = (await s.data.xrange(s.dlq, '-', '+')).map(([, fields]) => fieldsToObject(fields));
    expect(letters.map((f) => [f['dlq:reason'], f['dlq:stream'], f['dlq:group'], f['dlq:lost_count']])).toEqual([
      ['trimmed-undelivered', s.stream, 'nest', '6'],
    ]);
  },
  60_000,
);
