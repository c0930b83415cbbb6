import { compareEntryIds, compareStreamIds, minStreamId, nextStreamId, streamIdForAge } from './stream-id.js';

describe('stream ids', () => {
  it('compares as numbers, not strings', () => {
    expect(compareStreamIds('10-0', '9-0')).toBe(1);
    expect(compareStreamIds('5-10', '5-9')).toBe(1);
    expect(compareStreamIds('5-1', '5-1')).toBe(0);
    expect(compareStreamIds('5', '5-0')).toBe(0);
    expect(minStreamId('1700000000000-3', '999999999999-9')).toBe('999999999999-9');
  });

  it('orders canonical ids without BigInt exactly as the BigInt comparison does', () => {
    const ids = [
      '0-0',
      '0-1',
      '9-0',
      '10-0',
      '5-9',
      '5-10',
      '1700000000000-3',
      '999999999999-9',
      '18446744073709551615-18446744073709551615',
    ];
    for (let i = 0; i < 2_000; i++) {
      const ms = String(Math.floor(Math.random() * 10 ** (1 + Math.floor(Math.random() * 13))));
      ids.push(`${ms}-${Math.floor(Math.random() * 10 ** Math.floor(Math.random() * 4))}`);
    }
    const sign = (n: number) => Math.sign(n);
    for (let i = 0; i < ids.length; i++) {
      const a = ids[i];
      const b = ids[(i * 7 + 3) % ids.length];
      expect([a, b, sign(compareEntryIds(a, b))]).toEqual([a, b, sign(compareStreamIds(a, b))]);
    }
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
