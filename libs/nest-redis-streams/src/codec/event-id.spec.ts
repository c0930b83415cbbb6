import { DeadLetterReason } from '../dead-letter-reason.js';
import { InvalidEventIdError } from '../errors/invalid-event-id.error.js';
import { UndecodableEventIdError } from '../errors/undecodable-event-id.error.js';
import { decodeEntry, encodeEnvelope } from './envelope.js';
import { assertEventId, eventIdProblem, shownEventId } from './event-id.js';
import { JsonCodec } from './json.codec.js';

const codec = new JsonCodec();

describe('event ids', () => {
  it('accepts well-formed text, surrogate pairs included', () => {
    for (const id of ['order-1:placed', 'ünïcödé', 'emoji-\u{1F600}', ' ', '\u0000x']) expect(eventIdProblem(id)).toBeNull();
  });

  it('names what is wrong with an id consumers could not keep apart', () => {
    expect(eventIdProblem('')).toBe('is empty');
    expect(eventIdProblem(42)).toBe('is a number, not a string');
    expect(eventIdProblem(null)).toBe('is null, not a string');
    expect(eventIdProblem('a\uD800')).toMatch(/lone UTF-16 surrogate/);
    expect(eventIdProblem('\uDC00a')).toMatch(/lone UTF-16 surrogate/);
    expect(eventIdProblem('\uDBFF\uDFFF\uDC00')).toMatch(/lone UTF-16 surrogate/);
    expect(eventIdProblem('a\uFFFDb')).toMatch(/contains U\+FFFD/);
  });

  it('throws InvalidEventIdError with the value escaped and the fix', () => {
    expect(() => assertEventId('x\uD800', 'The eventId of the outbox event')).toThrow(
      new InvalidEventIdError(
        'The eventId of the outbox event ("x\\ud800") is not well-formed text (a lone UTF-16 surrogate, which would be ' +
          'stored as U+FFFD). Use text that names the event (an order id and a step); encode a binary id as hex or base64.',
        'x\uD800',
      ),
    );
    expect(() => assertEventId('ok')).not.toThrow();
  });

  it('shows an id escaped for messages and terminals, cut at 80 characters', () => {
    expect(shownEventId('a\uFFFD\u001b[2J')).toBe('"a\\ufffd\\u001b[2J"');
    expect(shownEventId('x'.repeat(100))).toBe(`"${'x'.repeat(79)}…"`);
  });

  it('encodeEnvelope refuses such an id and leaves an absent one to a UUID', () => {
    expect(() => encodeEnvelope({ data: 1, eventId: '\uFFFD' }, codec)).toThrow(InvalidEventIdError);
    expect(() => encodeEnvelope({ data: 1, eventId: '' }, codec)).toThrow(/The eventId \(""\) is empty/);
    expect(decodeEntry(encodeEnvelope({ data: 1, eventId: undefined }, codec), codec).eventId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('decodeEntry refuses an event id read with U+FFFD, in the envelope and in a foreign entry', () => {
    const envelope = encodeEnvelope({ data: 1, eventId: 'placeholder' }, codec);
    envelope[envelope.indexOf('placeholder')] = '\uFFFD';
    for (const fields of [envelope, ['event_id', 'a\uFFFD', 'n', '1']]) {
      let error: unknown;
      try {
        decodeEntry(fields, codec);
      } catch (err) {
        error = err;
      }
      expect(error).toBeInstanceOf(UndecodableEventIdError);
      expect((error as UndecodableEventIdError).reason).toBe(DeadLetterReason.UNDECODABLE_EVENT_ID);
      expect((error as Error).message).toMatch(/^The "event_id" field is not UTF-8 text/);
    }
    // Only the event id is the idempotency key: U+FFFD elsewhere in a foreign entry is its data.
    expect(decodeEntry(['name', '\uFFFD', 'event_id', 'e-1'], codec)).toMatchObject({ eventId: 'e-1', foreign: true });
  });
});
