import { JsonCodec } from '../codec/json.codec.js';
import { EntryEncoder } from './entry-encoder.js';
import { PayloadTooLargeError } from './errors/payload-too-large.error.js';
import { StreamRecord } from './stream-record.js';

describe('EntryEncoder', () => {
  const sizeOf = (fields: string[]) => fields.reduce((sum, f) => sum + Buffer.byteLength(f), 0);

  it('counts UTF-8 bytes exactly near the limit: an entry of exactly maxPayloadBytes passes, one byte more fails', () => {
    const probe = new EntryEncoder(new JsonCodec(), 1_000_000).encode(
      { pattern: 'p', data: new StreamRecord('', { eventId: 'e' }) },
      's',
    );
    const overhead = sizeOf(probe);
    // '€' is 3 bytes in UTF-8 for 1 UTF-16 unit: the fast path's bound is tight here.
    const data = (bytes: number) => new StreamRecord('€'.repeat(Math.floor(bytes / 3)) + 'a'.repeat(bytes % 3), { eventId: 'e' });
    const limit = overhead + 300;
    const encoder = new EntryEncoder(new JsonCodec(), limit);
    expect(sizeOf(encoder.encode({ pattern: 'p', data: data(300) }, 's'))).toBe(limit);
    expect(() => encoder.encode({ pattern: 'p', data: data(301) }, 's')).toThrow(PayloadTooLargeError);
    expect(() => encoder.encode({ pattern: 'p', data: data(301) }, 's')).toThrow(
      `is ${limit + 1} bytes, over maxPayloadBytes (${limit})`,
    );
  });

  it('writes headers only when a trace, the packet metadata or the record has some', () => {
    const encoder = new EntryEncoder(new JsonCodec(), 10_000);
    const fieldsOf = (data: unknown, metadata?: Record<string, string>) => encoder.encode({ pattern: 'p', data, metadata }, 's');
    expect(fieldsOf({ a: 1 })).not.toContain('headers');
    const fields = fieldsOf(new StreamRecord(1, { headers: { tenant: 'acme', trace: 'mine' } }), { trace: 'hook', other: 'x' });
    expect(JSON.parse(fields[fields.indexOf('headers') + 1])).toEqual({ trace: 'mine', other: 'x', tenant: 'acme' });
  });
});
