import { timePhrase, timeText } from './time-text.js';

describe('timeText: an id or a time for output', () => {
  it.each([
    [1_800_000_000_000, '2027-01-15T08:00:00.000Z'],
    ['1800000000000-7', '2027-01-15T08:00:00.000Z'],
    [8.64e15, '+275760-09-13T00:00:00.000Z'],
    // Past what a Date holds: the milliseconds, an id's digits exactly (not rounded to 1e17).
    ['99999999999999999-0', '99999999999999999'],
    ['18446744073709551615-18446744073709551615', '18446744073709551615'],
    [8.64e15 + 1, '8640000000000001'],
    [Infinity, 'Infinity'],
  ])('%s is %s', (time, text) => {
    expect(timeText(time)).toBe(text);
  });

  it('says what the milliseconds are inside a sentence', () => {
    expect(timePhrase(1e17)).toBe('100000000000000000 ms since the epoch');
    expect(timePhrase(0)).toBe('1970-01-01T00:00:00.000Z');
  });
});
