import { UnstartedDeliveries } from './unstarted-deliveries.js';

describe('UnstartedDeliveries', () => {
  it('holds a replayed entry with the count before its refused delivery while Redis has the count it was left with', () => {
    const counts = new UnstartedDeliveries();
    counts.remember('1-0', 1, 0);
    expect(counts.heldCount('1-0', 1)).toBe(0);
    // Refused again before it started: still pending with the same count, given back again.
    expect(counts.heldCount('1-0', 1)).toBe(0);
  });

  it('goes on with the count in Redis once the entry was delivered since, and forgets it', () => {
    const counts = new UnstartedDeliveries();
    counts.remember('1-0', 2, 1);
    expect(counts.heldCount('1-0', 3)).toBe(3);
    expect(counts.heldCount('1-0', 2)).toBe(2);
  });

  it('remembers nothing for an entry held to be counted on start (nothing to give back), and forgets on start', () => {
    const counts = new UnstartedDeliveries();
    counts.remember('1-0', 2, 2);
    expect(counts.heldCount('1-0', 2)).toBe(2);
    counts.remember('2-0', 1, 0);
    counts.forget('2-0');
    expect(counts.heldCount('2-0', 1)).toBe(1);
  });

  it('keeps a bounded number of entries, forgetting the oldest', () => {
    const counts = new UnstartedDeliveries();
    for (let n = 0; n <= 10_000; n++) counts.remember(`${n}-0`, 1, 0);
    expect(counts.heldCount('0-0', 1)).toBe(1);
    expect(counts.heldCount('10000-0', 1)).toBe(0);
  });
});
