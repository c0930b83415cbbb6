import { endBefore, startAfter } from './stream-range.js';

describe('exclusive range bounds', () => {
  it('has nothing after the last possible id and nothing before 0-0 (Redis refuses "(" there)', () => {
    expect(startAfter('18446744073709551615-18446744073709551615')).toBeNull();
    expect(startAfter('18446744073709551615-18446744073709551614')).toBe('(18446744073709551615-18446744073709551614');
    expect(endBefore('0-0')).toBeNull();
    expect(endBefore('0')).toBeNull();
    expect(endBefore('0-1')).toBe('(0-1');
  });
});
