import { parseRetryWait, parseRetryWaits, realIdle, realIdles, RETRY_WAITS, timeOf } from './retry-waits.js';

// The correction of a backdated PEL idle time (recovery/retry-waits.ts): a record applies only
// while the PEL still holds the delivery time the retry wrote.

describe('retry waits', () => {
  const now = 1_000_000;
  // Failed at now - 2 s with a 3 s back-off under a 30 s min-idle: the PEL was backdated 27 s.
  const wait = { backdatedTo: now - 2_000 - 27_000, failedAt: now - 2_000, dueAt: now + 1_000 };

  it('reads records and refuses what is not one', () => {
    expect(parseRetryWait('1:2:3')).toEqual({ backdatedTo: 1, failedAt: 2, dueAt: 3 });
    expect(parseRetryWait('-5:2:3')).toEqual({ backdatedTo: -5, failedAt: 2, dueAt: 3 });
    for (const bad of [null, undefined, '', '1:2', '1:2:3:4', 'a:b:c', '1.5:2:3']) expect(parseRetryWait(bad)).toBeNull();
  });

  it('counts a waiting entry as idle since its failure, with its due time', () => {
    expect(realIdle(29_000, now, wait)).toEqual({ idleMs: 2_000, retryAt: now + 1_000 });
    // Redis' two clocks (the script's TIME, the reader's XPENDING and TIME) differ by a few ms.
    expect(realIdle(29_000 + RETRY_WAITS.toleranceMs, now, wait)).toEqual({ idleMs: 2_000, retryAt: now + 1_000 });
  });

  it('ignores a stale record: any later delivery, claim or renewal wrote a real delivery time', () => {
    expect(realIdle(500, now, wait)).toEqual({ idleMs: 500, retryAt: null });
    // Handed back (idle set to min-idle) after the retry ran: not the backdated time either.
    expect(realIdle(30_000, now, wait)).toEqual({ idleMs: 30_000, retryAt: null });
    expect(realIdle(29_000, now, null)).toEqual({ idleMs: 29_000, retryAt: null });
  });

  it('keeps Redis idle times where the time or the records could not be read', () => {
    const rows: Array<[string, string, number, number]> = [['1-0', 'c', 29_000, 1]];
    expect(realIdles(rows, null, new Map([['1-0', wait]]))).toEqual([{ idleMs: 29_000, retryAt: null }]);
    expect(parseRetryWaits(['1-0'], [new Error('NOPERM'), null]).size).toBe(0);
    expect(parseRetryWaits(['1-0', '2-0'], [null, ['1:2:3', null]])).toEqual(
      new Map([['1-0', { backdatedTo: 1, failedAt: 2, dueAt: 3 }]]),
    );
    expect(timeOf([null, ['1000', '250999']])).toBe(1_000_250);
    expect(timeOf([new Error('NOPERM'), null])).toBeNull();
  });
});
