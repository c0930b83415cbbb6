// LIBRARY BUG, minimal reproduction (found by chaos scenario 8). The reclaimer takes at most
// `room` entries (prefetchCount minus held, reclaimer.ts), and a busy consumer's read loop fills
// every freed slot with new entries (XREADGROUP >) at once, so room is almost never above 0 when
// the reclaim timer fires. While a group is saturated, entries of a dead or closed consumer (also
// those close() handed back "so another instance can reclaim it at once") wait until the load
// stops: unbounded latency for exactly the entries that are already late. Fails until reclaimed
// entries get a share of the room.
import { waitFor } from '../../support/helpers.js';
import { scenarioTest } from '../support/chaos-test.js';

scenarioTest(
  'entries of a dead consumer are reclaimed within a few rounds although the survivor is saturated',
  async (s) => {
    // The survivor handles 40 entries/s (8 at a time, 200 ms each); the producer writes 75/s for 12 s.
    await s.consumer('survivor', { MIN_IDLE: 1_000, RECLAIM_MS: 100, CONCURRENCY: 8, PREFETCH: 32, HANDLER_MS: 200 });
    const producer = s.producer('producer', { COUNT: 900, RATE: 75 });
    const lag = async () => Number(((await s.data.xinfo('GROUPS', s.stream)) as unknown[][])[0].at(-1));
    await waitFor(async () => (await lag()) > 40, 'the survivor to be saturated', 10_000);
    // A second consumer takes 8 entries and dies: they are stale 1 s later.
    const read = (await s.data.xreadgroup('GROUP', 'nest', 'dead', 'COUNT', 8, 'STREAMS', s.stream, '>')) as [
      string,
      [string, string[]][],
    ][];
    const keys = read[0][1].map(([, fields]) => fields[fields.indexOf('event_id') + 1]);
    const started = Date.now();
    const reclaimed = async () => (await s.ledger.hmget(s.keys.effects('nest'), ...keys)).filter(Boolean).length;
    const after = await waitFor(
      async () => ((await reclaimed()) === 8 ? Date.now() - started : 0),
      "the dead consumer's entries",
      8_000,
    ).catch(() => -1);
    const done = await reclaimed();
    await producer.kill();
    // min-idle 1 s + reclaim rounds every 100 ms: all 8 within 3 s. Today: a few or none within 8 s.
    expect({ done, inTime: after > 0 && after < 3_000 }).toEqual({ done: 8, inTime: true });
  },
  60_000,
);
