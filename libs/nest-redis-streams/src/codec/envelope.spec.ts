import { UndecodableEntryError } from '../errors/undecodable-entry.error.js';
import { decodeEntry, encodeEnvelope, scanEntry } from './envelope.js';
import { JsonCodec } from './json.codec.js';

const codec = new JsonCodec();

describe('envelope', () => {
  it('round-trips data, event id, headers and reply coordinates', () => {
    const fields = encodeEnvelope(
      { data: { a: [1, 'x'] }, eventId: 'e-1', headers: { traceparent: 't' }, replyTo: 'r', correlationId: 'c' },
      codec,
    );
    expect(decodeEntry(fields, codec)).toEqual({
      data: { a: [1, 'x'] },
      eventId: 'e-1',
      headers: { traceparent: 't' },
      replyTo: 'r',
      correlationId: 'c',
      foreign: false,
    });
  });

  it('generates an event id when the producer gives none', () => {
    const decoded = decodeEntry(encodeEnvelope({ data: 1 }, codec), codec);
    expect(decoded.eventId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('keeps undefined data decodable', () => {
    expect(decodeEntry(encodeEnvelope({ data: undefined }, codec), codec).data).toBeNull();
  });

  it('reads a foreign entry as an object of its own fields, without touching prototypes', () => {
    const decoded = decodeEntry(['__proto__', '{"polluted":true}', 'amount', '5'], codec);
    expect(decoded.foreign).toBe(true);
    expect(Object.getPrototypeOf(decoded.data)).toBe(Object.prototype);
    expect((decoded.data as Record<string, unknown>).amount).toBe('5');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('decodes headers to own string properties: a __proto__ key is a header, never a prototype', () => {
    const { headers } = decodeEntry(['v', 'nrs/1', 'data', '1', 'headers', '{"__proto__":{"polluted":1},"attempt":2}'], codec);
    expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
    expect(Object.getOwnPropertyNames(headers)).toEqual(['__proto__', 'attempt']);
    expect(headers.attempt).toBe('2');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("scans a request's deadline and a re-drive's target group before decoding", () => {
    const request = scanEntry([
      ...encodeEnvelope({ data: '{bad', replyTo: 'r', correlationId: 'c', deadline: 1234 }, codec),
      'nrs:group',
      'billing',
    ]);
    expect(request).toMatchObject({ foreign: false, deadline: 1234, replyTo: 'r', targetGroup: 'billing' });
    // A foreign entry keeps its own fields: only the reserved target group is the transport's.
    expect(scanEntry(['deadline', '1', 'reply_to', 'x', 'nrs:group', 'g'])).toEqual({
      foreign: true,
      targetGroup: 'g',
      eventId: undefined,
    });
    expect(decodeEntry(['amount', '5', 'nrs:group', 'g'], codec).data).toEqual({ amount: '5' });
    // So is a re-drive's lineage: the producer's data stays what the producer wrote.
    const redriven = ['amount', '5', 'nrs:redriven_from', '9-0', 'nrs:original_id', '1-0'];
    expect(decodeEntry(redriven, codec).data).toEqual({ amount: '5' });
  });

  it.each([
    [['v', 'nrs/1', 'data', '{oops'], /could not be deserialized/],
    [['v', 'nrs/1'], /has no "data" field/],
    [['v', 'nrs/1', 'data', '1', 'headers', '[1]'], /must be a JSON object/],
    [['v', 'nrs/1', 'data', '1', 'headers', 'nope'], /is not JSON/],
  ])('rejects a broken envelope %j with a reason', (fields, reason) => {
    expect(() => decodeEntry(fields, codec)).toThrow(UndecodableEntryError);
    expect(() => decodeEntry(fields, codec)).toThrow(reason);
  });
});
