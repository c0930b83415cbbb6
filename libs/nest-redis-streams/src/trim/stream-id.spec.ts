import { compareStreamIds, minStreamId, nextStreamId, streamIdForAge } from './stream-id.js';

describe('stream ids', () => {
  it('compares as numbers, not strings', () => {
    expect(compareStreamIds('10-0', '9-0')).toBe(1);
    expect(compareStreamIds('5-10', '5-9')).toBe(1);
    expect(compareStreamIds('5-1', '5-1')).toBe(0);
    expect(compareStreamIds('5', '5-0')).toBe(0);
    expect(minStreamId('1700000000000-3', '999999999999-9')).toBe('999999999999-9');
  });

  it('gives the next id, carrying into the milliseconds at the 64-bit limit', () => {
    expect(nextStreamId('0-0')).toBe('0-1');
    expect(nextStreamId('1700000000000-41')).toBe('1700000000000-42');
    expect(nextStreamId('7-18446744073709551615')).toBe('8-0');
  });

  it('turns an age into a MINID', () => {
    expect(streamIdForAge(1_000, 5_000)).toBe('4000-0');
    expect(streamIdForAge(10_000, 5_000)).toBe('0-0');
  });
});
