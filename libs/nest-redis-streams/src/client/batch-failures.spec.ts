import { batchError, describeValue } from './batch-failures.js';

describe('batchError', () => {
  it('names the first three failures by index and counts the rest', () => {
    const failures = [1, 4, 6, 9, 12].map((index) => ({ index, error: new RangeError(`bad ${index}`) }));
    const error = batchError('orders', new Array(20).fill(undefined), failures, 'notEncoded');
    expect(error.message).toBe(
      '5 of 20 entries for stream "orders" could not be encoded, so nothing was written: #1 (RangeError: bad 1); ' +
        '#4 (RangeError: bad 4); #6 (RangeError: bad 6); and 2 more. Fix or remove those entries (error.failures gives their indexes) and emit the batch again.',
    );
    expect(error.failures).toBe(failures);
    expect(error.cause).toBe(failures[0].error);
  });

  it('says once why every entry failed when they share one error', () => {
    const down = new Error('Redis is down');
    const error = batchError(
      'orders',
      [undefined, undefined],
      [0, 1].map((index) => ({ index, error: down })),
      'notStored',
    );
    expect(error.message).toMatch(
      /^2 of 2 entries for stream "orders" were not stored: all 2 for the same reason \(Error: Redis is down\)\. Emit the failed entries again/,
    );
  });
});

describe('describeValue', () => {
  it('describes what was passed instead of an array', () => {
    expect([undefined, null, 'abc', 42, new Map(), Object.create(null)].map(describeValue)).toEqual([
      'undefined',
      'null',
      'the string "abc"',
      'number 42',
      'an object (Map)',
      'an object (no prototype)',
    ]);
  });
});
