import { fc, hostileString, hugeString } from '../../../../test/support/property-arbitraries.js';
import { InvalidEventIdError } from '../errors/invalid-event-id.error.js';
import { UndecodableEntryError } from '../errors/undecodable-entry.error.js';
import { UndecodableEventIdError } from '../errors/undecodable-event-id.error.js';
import { decodeEntry, encodeEnvelope } from './envelope.js';
import { eventIdProblem } from './event-id.js';
import { JsonCodec } from './json.codec.js';

// encode → decode is the identity for every message a producer may send; every other field list
// decodes or is refused with the library's own error (which parks the entry), never another.

const json = new JsonCodec();
const eventId = hostileString.filter((id) => eventIdProblem(id) === null);
const message = fc.record(
  {
    data: fc.jsonValue({ maxDepth: 3 }),
    eventId,
    headers: fc.dictionary(hostileString, hostileString, { maxKeys: 5 }),
    replyTo: hostileString.filter((s) => s !== ''),
    correlationId: hostileString.filter((s) => s !== ''),
    deadline: fc.integer({ min: 0, max: 8.64e15 }),
  },
  { requiredKeys: ['data'] },
);

describe('envelope codec (properties)', () => {
  it('decodes what it encodes', () => {
    fc.assert(
      fc.property(message, (m) => {
        const decoded = decodeEntry(encodeEnvelope(m, json), json);
        // JSON has one zero: -0 comes back as 0.
        expect(decoded.data).toEqual(JSON.parse(JSON.stringify(m.data)));
        if (m.eventId !== undefined) expect(decoded.eventId).toBe(m.eventId);
        else expect(decoded.eventId).toMatch(/^[0-9a-f-]{36}$/);
        expect(decoded.headers).toEqual(m.headers ?? {});
        expect(decoded.replyTo).toBe(m.replyTo);
        expect(decoded.correlationId).toBe(m.correlationId);
        expect(decoded.foreign).toBe(false);
      }),
    );
  });

  it('refuses an event id only for the documented reasons, with InvalidEventIdError', () => {
    fc.assert(
      fc.property(fc.oneof(hostileString, hugeString), (id) => {
        const problem = eventIdProblem(id);
        const encode = () => encodeEnvelope({ data: 1, eventId: id }, json);
        if (problem === null) expect(encode).not.toThrow();
        else expect(encode).toThrow(InvalidEventIdError);
        expect(problem === null).toBe(id !== '' && Buffer.from(id, 'utf8').toString('utf8') === id && !id.includes('\ufffd'));
      }),
    );
  });

  it('decodes any field list or refuses it with the library error that parks it', () => {
    const fields = fc.oneof(
      fc.array(
        fc.oneof(hostileString, fc.constantFrom('v', 'nrs/1', 'data', 'headers', 'event_id', '__proto__', '{}', '[]', 'null')),
        {
          maxLength: 12,
        },
      ),
      fc
        .tuple(fc.oneof(hostileString, fc.json()), fc.oneof(hostileString, fc.json()), fc.oneof(hostileString, fc.constant('e')))
        .map(([data, headers, id]) => ['v', 'nrs/1', 'event_id', id, 'data', data, 'headers', headers]),
    );
    fc.assert(
      fc.property(fields, (list) => {
        try {
          const decoded = decodeEntry(list, json);
          expect(Object.getPrototypeOf(decoded.headers)).toBe(Object.prototype);
        } catch (err) {
          expect(err instanceof UndecodableEntryError || err instanceof UndecodableEventIdError).toBe(true);
        }
      }),
    );
  });
});
