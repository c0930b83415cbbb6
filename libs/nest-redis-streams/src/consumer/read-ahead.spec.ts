import { SERVER_DEFAULTS } from '../constants.js';
import { AUTO_READ_AHEAD, ReadAhead } from './read-ahead.js';

/** The floor of the automatic read-ahead with default options. */
const FLOOR = SERVER_DEFAULTS.prefetchCount;

/** A clock the test moves: each settle takes `msPerEntry`. */
function paced(readAhead: () => ReadAhead, clock: { now: number }, msPerEntry: number, entries: number): ReadAhead {
  const subject = readAhead();
  for (let i = 0; i < entries; i++) {
    clock.now += msPerEntry;
    subject.settled();
  }
  return subject;
}

describe('ReadAhead', () => {
  const clock = { now: 0 };
  const tick = () => clock.now;

  it('keeps a prefetchCount the user chose, whatever the pace', () => {
    const fixed = new ReadAhead(8, false, tick);
    for (let i = 0; i < 1_000; i++) fixed.settled();
    expect(fixed.limit).toBe(8);
  });

  it('starts at the floor (64, or concurrency when larger)', () => {
    expect(new ReadAhead(FLOOR, true, tick).limit).toBe(FLOOR);
    expect(new ReadAhead(100, true, tick).limit).toBe(100);
    expect(new ReadAhead(300, true, tick).limit).toBe(300);
  });

  it('grows to the ceiling while the handler settles entries faster than 50 ms per read-ahead', () => {
    // 10 µs per entry: 50 ms holds 5,000, capped at 256.
    expect(paced(() => new ReadAhead(FLOOR, true, tick), clock, 0.01, 64).limit).toBe(AUTO_READ_AHEAD.max);
  });

  it('sizes the read-ahead to about 50 ms of work between the floor and the ceiling', () => {
    // 0.4 ms per entry: 125 entries are 50 ms (the first window starts at its first settle).
    const { limit } = paced(() => new ReadAhead(FLOOR, true, tick), clock, 0.4, 64);
    expect(limit).toBeGreaterThanOrEqual(120);
    expect(limit).toBeLessThanOrEqual(130);
  });

  it('stays at the floor for a slow handler (1 ms or more per entry)', () => {
    expect(paced(() => new ReadAhead(FLOOR, true, tick), clock, 1, 500).limit).toBe(FLOOR);
    expect(paced(() => new ReadAhead(FLOOR, true, tick), clock, 20, 500).limit).toBe(FLOOR);
  });

  it('falls back to the floor once the handler slows down (or the backlog ends: waits read as a slow pace)', () => {
    const readAhead = paced(() => new ReadAhead(FLOOR, true, tick), clock, 0.01, 64);
    expect(readAhead.limit).toBe(AUTO_READ_AHEAD.max);
    for (let i = 0; i < AUTO_READ_AHEAD.max; i++) {
      clock.now += 5;
      readAhead.settled();
    }
    expect(readAhead.limit).toBe(FLOOR);
  });

  it('changes only at the end of a window of `limit` settles (one clock read per window)', () => {
    let reads = 0;
    const readAhead = new ReadAhead(FLOOR, true, () => {
      reads++;
      return clock.now;
    });
    for (let i = 0; i < 63; i++) readAhead.settled();
    expect(readAhead.limit).toBe(FLOOR);
    readAhead.settled();
    expect(reads).toBe(2);
  });
});
