import { SearchReadSizer } from './search-read-size.js';

const BUDGET = { limit: 50, entries: 10_000, ms: 100, pageSize: 500 };

/** A sizer on a clock the test moves. */
function sizer(budget = BUDGET) {
  const clock = { now: 0 };
  return { clock, sizer: new SearchReadSizer(budget, 0, () => clock.now) };
}

describe('SearchReadSizer: reads sized by what the request can still look at', () => {
  it('reads one entry per key first: nothing is known about their size yet', () => {
    expect(sizer().sizer.next(1, 0)).toBe(1);
    expect(sizer().sizer.next(8, 0)).toBe(1);
  });

  it('grows from the result limit, doubling, up to the page size, while entries are small and time is plenty', () => {
    const { sizer: s } = sizer();
    const counts: number[] = [];
    let scanned = 0;
    for (let step = 0; step < 6; step++) {
      const count = s.next(1, scanned);
      counts.push(count);
      s.fetched(count, count * 100);
      scanned += count;
    }
    expect(counts).toEqual([1, 50, 100, 200, 400, 500]);
  });

  it('fetches at most as many characters again as before (at least 64 KB): large entries are read one by one', () => {
    const { sizer: s } = sizer({ ...BUDGET, ms: 30_000 });
    s.fetched(1, 512 * 1024);
    expect(s.next(1, 1)).toBe(1);
    s.fetched(1, 512 * 1024);
    expect(s.next(1, 2)).toBe(2);
    s.fetched(2, 1024 * 1024);
    expect(s.next(1, 4)).toBe(4);
    s.fetched(4, 2048 * 1024);
    // 4 MB a step at most, however much was read before.
    expect(s.next(1, 8)).toBe(8);
    s.fetched(8, 4096 * 1024);
    expect(s.next(1, 16)).toBe(8);
  });

  it('reads no more entries than the time left can look at, at the pace seen so far', () => {
    const { clock, sizer: s } = sizer();
    s.fetched(1, 100);
    s.fetched(50, 5_000);
    clock.now = 51; // 51 entries in 51 ms: 49 ms left is 49 entries
    expect(s.next(1, 51)).toBe(49);
    clock.now = 99;
    expect(s.next(1, 51)).toBe(1);
  });

  it('shares a step between the keys it reads, and never asks for more than the entry budget left', () => {
    const { sizer: s } = sizer({ ...BUDGET, entries: 30 });
    s.fetched(4, 400);
    expect(s.next(4, 4)).toBe(6);
    expect(s.next(1, 29)).toBe(1);
  });
});
