import {
  DeadLetterReason,
  deadLetterFields,
  describeError,
  splitDeadLetterBuffers,
  splitDeadLetterFields,
} from './dead-letter-record.js';

describe('dead-letter record', () => {
  const details = { reason: DeadLetterReason.MAX_DELIVERIES, stream: 's', id: '1-0', group: 'g', consumer: 'c', deliveries: 5 };

  it('keeps the original fields apart from the metadata, even ones that look like metadata', () => {
    const fields = deadLetterFields({ ...details, error: new RangeError('too big') }, ['amount', '5', 'dlq:reason', 'mine']);
    const { meta, original } = splitDeadLetterFields(fields);
    expect(meta).toMatchObject({
      reason: 'max-deliveries',
      stream: 's',
      id: '1-0',
      group: 'g',
      consumer: 'c',
      error: 'too big',
      error_class: 'RangeError',
      deliveries: '5',
    });
    expect(original).toEqual(['amount', '5', 'dlq:reason', 'mine']);
  });

  it('gives back every original name, including ones that look escaped', () => {
    const original = ['orig:x', '1', 'orig:dlq:y', '2', 'dlq:z', '3', 'plain', '4'];
    const fields = deadLetterFields(details, original);
    expect(splitDeadLetterFields(fields).original).toEqual(original);
    const bytes = splitDeadLetterBuffers(fields.map((f) => Buffer.from(f)));
    expect(bytes.original.flat().map((b) => b.toString())).toEqual(original);
    expect(bytes.meta.reason).toBe('max-deliveries');
  });

  it('describes errors of every shape Nest hands over', () => {
    expect(describeError(new TypeError('x'))).toEqual({ message: 'x', errorClass: 'TypeError' });
    expect(describeError({ status: 'error', message: 'Internal server error' })).toEqual({
      message: 'Internal server error',
      errorClass: '',
    });
    expect(describeError('plain')).toEqual({ message: 'plain', errorClass: 'string' });
    expect(describeError(undefined)).toEqual({ message: '', errorClass: '' });
  });
});
