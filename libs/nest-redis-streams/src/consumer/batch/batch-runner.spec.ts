import { HeldEntry } from '../held-entry.js';
import type { SettleOutcome } from '../slot-owner.interface.js';
import { type BatchHost, BatchRunner } from './batch-runner.js';

/** A consumer stand-in: counts running entries and settles through the entries' batches, as ConsumerSlots does. */
function fakeHost(): BatchHost & { running: number; allowed: boolean } {
  return {
    stream: 's',
    group: 'g',
    consumer: 'c',
    running: 0,
    allowed: true,
    ref: (entry) => ({ stream: 's', group: 'g', consumer: 'c', id: entry.id, deliveries: entry.deliveries }),
    mayStart: (entry) => !entry.settled,
    mayStartBatch() {
      return this.allowed;
    },
    occupy(entries) {
      this.running += entries.length;
    },
    forget: () => undefined,
    settled(entry: HeldEntry, _outcome: SettleOutcome) {
      if (entry.settled) return;
      entry.settled = true;
      this.running--;
      entry.batch?.entrySettled();
    },
    settledUnexpectedly(entry) {
      this.settled(entry, 'left-pending');
    },
  };
}

const owner = { manualAck: () => Promise.resolve(true) };
const entry = (n: number) => new HeldEntry(`${n}-0`, ['v', String(n)], 1, owner);
const flushMicrotasks = () => new Promise<void>((resolve) => queueMicrotask(resolve));

describe('BatchRunner', () => {
  const writes = {} as never;
  let started: HeldEntry[][];
  let host: ReturnType<typeof fakeHost>;
  const runner = (maxSize: number, maxWaitMs: number, concurrency = 1) =>
    new BatchRunner(host, writes, { maxSize, maxWaitMs, concurrency, maxDeliveries: 5 }, (entries) => started.push(entries));

  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['queueMicrotask', 'nextTick', 'setImmediate'] });
    started = [];
    host = fakeHost();
  });
  afterEach(() => jest.useRealTimers());

  it('starts full batches at once, once the entries of a read are queued, and keeps the rest for maxWaitMs', async () => {
    const batches = runner(3, 1_000);
    for (let n = 1; n <= 7; n++) batches.push(entry(n));
    expect(started).toHaveLength(0); // decided after the read's synchronous loop
    await flushMicrotasks();
    expect(started.map((b) => b.map((e) => e.id))).toEqual([['1-0', '2-0', '3-0']]);
    for (const e of started[0]) host.settled(e, 'acked');
    expect(started.map((b) => b.length)).toEqual([3, 3]);
    for (const e of started[1]) host.settled(e, 'acked');
    expect(started).toHaveLength(2); // one entry left: a partial batch waits
    jest.advanceTimersByTime(1_000);
    expect(started.map((b) => b.map((e) => e.id))).toEqual([['1-0', '2-0', '3-0'], ['4-0', '5-0', '6-0'], ['7-0']]);
  });

  it('runs at most `concurrency` batches at once, and none while the host may not start one', async () => {
    const batches = runner(2, 0, 2);
    host.allowed = false;
    for (let n = 1; n <= 6; n++) batches.push(entry(n));
    await flushMicrotasks();
    expect(started).toHaveLength(0);
    host.allowed = true;
    batches.startReady();
    expect(started.map((b) => b.length)).toEqual([2, 2]);
    for (const e of started[0]) host.settled(e, 'acked');
    expect(started).toHaveLength(3);
  });

  it('leaves entries lost while waiting out of the batch, and clear() forgets the queue and its timer', async () => {
    const batches = runner(3, 500);
    const lost = entry(1);
    batches.push(lost);
    batches.push(entry(2));
    lost.markLost();
    await flushMicrotasks();
    jest.advanceTimersByTime(500);
    expect(started.map((b) => b.map((e) => e.id))).toEqual([['2-0']]);
    batches.push(entry(3));
    await flushMicrotasks();
    batches.clear();
    jest.advanceTimersByTime(10_000);
    expect(started).toHaveLength(1);
    expect(batches.waiting).toBe(0);
  });
});
