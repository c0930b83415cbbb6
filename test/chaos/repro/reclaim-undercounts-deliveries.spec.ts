// LIBRARY BUG (fixed in 4082b7e, kept as a regression test), minimal reproduction (found by chaos
// scenario 5, where it makes a poison entry go 4 times through a group with maxDeliveries 3).
// StreamConsumer.acceptClaimed reads the delivery counts of reclaimed entries with one XPENDING
// over [first claimed id, last claimed id] for this consumer, COUNT = claimed + held. This
// consumer's PEL in that range can hold more entries than that (finished entries whose ack is still
// in flight, entries a lost reply left behind), so the last rows are cut off and `counts.get(id) ??
// 1` handed the handler delivery 1: the retry budget, the back-off and ctx.getDeliveryCount()
// restarted from 1.
import { WorkerProcess } from '../../support/worker-process.js';
import { scenarioTest } from '../support/chaos-test.js';

scenarioTest(
  'a reclaimed entry reaches the handler with its real delivery count',
  async (s) => {
    await s.data.xgroup('CREATE', s.stream, 'nest', '0', 'MKSTREAM');
    for (let i = 0; i < 10; i++) await s.data.xadd(s.stream, '*', 'i', String(i));
    // A dead consumer "x" read all ten (delivery count 1 each).
    const read = (await s.data.xreadgroup('GROUP', 'nest', 'x', 'COUNT', 10, 'STREAMS', s.stream, '>')) as [
      string,
      [string, string[]][],
    ][];
    const ids = read[0][1].map(([id]) => id);
    const worker = await WorkerProcess.start({
      REDIS_URL: s.server.url,
      STREAM: s.stream,
      CONSUMER: 'c1',
      MIN_IDLE: '30000',
      RECLAIM_MS: '2000',
    });
    try {
      // c1 owns the middle eight (as if it had finished them and the acks were still on the way)...
      await s.data.call('XCLAIM', s.stream, 'nest', 'c1', 0, ...ids.slice(1, 9), 'JUSTID');
      // ...and the first and last are stale under "x": c1's next reclaim round claims both.
      await s.data.call('XCLAIM', s.stream, 'nest', 'x', 0, ids[0], ids[9], 'IDLE', 60_000, 'JUSTID');
      const last = await worker.waitFor((m) => m.type === 'start' && m.id === ids[9], 'the last stale entry to be reclaimed');
      // Read once by "x", claimed once by c1: delivery 2. Before 4082b7e: 1.
      expect(last.deliveries).toBe(2);
    } finally {
      await worker.kill();
    }
  },
  60_000,
);
