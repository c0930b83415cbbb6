import { OperationError } from './errors/operation.error.js';
import { parseStreamId, parseTime } from './stream-position.js';

const refused = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err instanceof OperationError ? `${err.kind}: ${err.message}` : `not an OperationError: ${String(err)}`;
  }
  return 'accepted';
};

describe('stream ids and times from user input', () => {
  it('takes ids up to 2^64 - 1 in each part and refuses one past it, naming the value', () => {
    expect(parseStreamId('18446744073709551615-18446744073709551615')).toBe('18446744073709551615-18446744073709551615');
    expect(parseStreamId('1700000000000')).toBe('1700000000000-0');
    expect(parseStreamId('01700000000000-007')).toBe('1700000000000-7');
    expect(refused(() => parseStreamId('18446744073709551616', '--id'))).toBe(
      'bad-request: --id "18446744073709551616" is out of range: both parts of a stream id (<ms>-<seq>) are at most 18446744073709551615.',
    );
    expect(refused(() => parseStreamId('1-99999999999999999999', '--id'))).toMatch(/^bad-request: --id "1-9+" is out of range/);
  });

  it('refuses a time whose milliseconds a number cannot hold exactly', () => {
    expect(parseTime('1700000000000')).toBe(1700000000000);
    expect(parseTime(String(Number.MAX_SAFE_INTEGER))).toBe(Number.MAX_SAFE_INTEGER);
    expect(refused(() => parseTime('99999999999999999999'))).toMatch(/^bad-request: A time must be milliseconds/);
    expect(refused(() => parseTime(Number.NaN))).toMatch(/^bad-request/);
  });
});

describe('times from user input are digits or ISO dates, nothing Date.parse guesses', () => {
  it('refuses "-1", "1,2", "May 1" and arrays (V8 reads the strings as dates in 2001) and takes ISO dates', () => {
    for (const bad of ['-1', '1,2', 'May 1', ['1']])
      expect(refused(() => parseTime(bad))).toMatch(/^bad-request: A time must be milliseconds since the epoch or an ISO date/);
    expect(parseTime('2024-05-01T12:00:00Z')).toBe(Date.UTC(2024, 4, 1, 12));
    expect(parseTime('2024-05-01')).toBe(Date.UTC(2024, 4, 1));
    expect(parseTime('2024-05-01T12:00:00.250+02:00')).toBe(Date.UTC(2024, 4, 1, 10, 0, 0, 250));
  });
});
