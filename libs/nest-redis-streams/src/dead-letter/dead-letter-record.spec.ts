import {
  DLQ_FIELDS,
  DeadLetterReason,
  deadLetterFields,
  deadLetterMetadata,
  escapedOriginalFields,
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

  it('writes every metadata field, the time from the clock and empty error fields when nothing was thrown', () => {
    jest.useFakeTimers({ now: 1_700_000_000_000 });
    try {
      const meta = deadLetterMetadata(details);
      const names = meta.filter((_, i) => i % 2 === 0);
      expect(names).toEqual(Object.values(DLQ_FIELDS).filter((name) => name !== DLQ_FIELDS.lostCount));
      expect(splitDeadLetterFields(meta).meta).toMatchObject({
        time: '1700000000000',
        error: '',
        error_class: '',
        deliveries: '5',
      });
    } finally {
      jest.useRealTimers();
    }
  });

  it('escapes nothing of a missing payload and drops a name without a value', () => {
    expect(escapedOriginalFields(null)).toEqual([]);
    expect(escapedOriginalFields(['dlq:a', '1', 'dangling'])).toEqual(['orig:dlq:a', '1']);
  });

  it('describes an error without a message by its JSON, one that cannot be JSON by String, and a nameless Error by its class', () => {
    expect(describeError({ code: 7 })).toEqual({ message: '{"code":7}', errorClass: '' });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(describeError(circular)).toEqual({ message: '[object Object]', errorClass: '' });
    class PaymentError extends Error {}
    const nameless = new PaymentError('declined');
    nameless.name = '';
    expect(describeError(nameless)).toEqual({ message: 'declined', errorClass: 'PaymentError' });
  });
});
