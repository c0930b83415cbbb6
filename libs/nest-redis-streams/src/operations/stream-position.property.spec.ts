import { fc, hostileString, hugeString, MAX_U64, streamIdParts } from '../../../../test/support/property-arbitraries.js';
import { compareStreamIds, nextStreamId } from '../keys/stream-id.js';
import { OperationError } from './errors/operation.error.js';
import { decodeSearchCursor, encodeSearchCursor, SEARCH_DONE, type SearchCursorState } from './search-cursor.js';
import { idBeforeTime, parseStreamId, parseTime } from './stream-position.js';

// Ids, times and cursors typed by an operator or handed back by a browser: each is either read
// exactly or refused with an OperationError, and what is read prints back to itself.

const refusedOrReturns = <T>(read: () => T): T | undefined => {
  try {
    return read();
  } catch (err) {
    expect(err).toBeInstanceOf(OperationError);
    expect((err as OperationError).kind).toBe('bad-request');
    return undefined;
  }
};

const idText = fc.oneof(
  streamIdParts.map((p) => p.id),
  streamIdParts.map((p) => `${String(p.ms).padStart(20, '0')}-${p.seq}`),
  fc.bigInt({ min: 0n, max: MAX_U64 * 2n }).map(String),
  fc.constantFrom('18446744073709551616-0', '0-18446744073709551616', '-', '+', '$', '1-', '-1', '1--1', ' 1-1 ', '1-1\n', '١-١'),
  hostileString,
);

const cursorState: fc.Arbitrary<SearchCursorState> = fc.record({
  target: fc.oneof(hostileString, fc.constantFrom('stream', 'pending:g', 'dead-letters')),
  newest: fc.boolean(),
  window: fc.record({
    start: fc.oneof(
      fc.constant('-'),
      streamIdParts.map((p) => p.id),
    ),
    end: fc.oneof(
      fc.constant('+'),
      streamIdParts.map((p) => p.id),
    ),
  }),
  positions: fc.array(
    fc.oneof(
      fc.constant(null),
      fc.constant(SEARCH_DONE),
      streamIdParts.map((p) => p.id),
    ),
    { maxLength: 40 },
  ),
});

describe('ids, times and cursors from outside (properties)', () => {
  it('parseStreamId reads any valid id to its Redis form and refuses the rest with the range or shape named', () => {
    fc.assert(
      fc.property(idText, (text) => {
        const id = refusedOrReturns(() => parseStreamId(text));
        if (id === undefined) return;
        const [ms, seq] = id.split('-').map(BigInt);
        expect(ms <= MAX_U64 && seq <= MAX_U64).toBe(true);
        expect(id).toBe(`${ms}-${seq}`);
        expect(parseStreamId(id)).toBe(id);
      }),
    );
  });

  it('parseTime reads digits and ISO dates to safe whole milliseconds, refusing anything else', () => {
    const date = fc.date({ min: new Date(0), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true });
    fc.assert(
      fc.property(
        fc.oneof(
          fc.nat().map(String),
          fc.constantFrom(8.64e15, 8.64e15 + 1, Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER + 1, -1, 1e21, -0, Number.NaN),
          date.map((d) => d.toISOString()),
          hostileString,
          hugeString,
          fc.double(),
        ),
        (value) => {
          const ms = refusedOrReturns(() => parseTime(value));
          if (ms === undefined) return;
          expect(Number.isSafeInteger(ms) && ms >= 0).toBe(true);
        },
      ),
    );
    fc.assert(fc.property(date, (d) => expect(parseTime(d.toISOString())).toBe(d.getTime())));
  });

  it("idBeforeTime is the last id before a millisecond: the next id is that millisecond's first", () => {
    fc.assert(
      fc.property(fc.oneof(fc.nat(), fc.constantFrom(1, 8.64e15, Number.MAX_SAFE_INTEGER)), (ms) => {
        const before = idBeforeTime(ms);
        expect(parseStreamId(before)).toBe(before);
        if (ms === 0) expect(before).toBe('0-0');
        else {
          expect(compareStreamIds(before, `${ms}-0`)).toBeLessThan(0);
          expect(nextStreamId(before)).toBe(`${ms}-0`);
        }
      }),
    );
  });

  it('a search cursor decodes to the state it encodes', () => {
    fc.assert(
      fc.property(cursorState, (state) => {
        expect(decodeSearchCursor(encodeSearchCursor(state), state.target, state.positions.length)).toEqual(state);
      }),
    );
  });

  it('any other cursor text is refused with an OperationError, never another error', () => {
    const json = fc.jsonValue({ maxDepth: 3 }).map((v) => Buffer.from(JSON.stringify(v)).toString('base64url'));
    const tampered = fc
      .tuple(cursorState, fc.jsonValue({ maxDepth: 2 }), fc.constantFrom('v', 't', 'n', 'w', 'p'))
      .map(([state, value, key]) => {
        const raw = JSON.parse(Buffer.from(encodeSearchCursor(state), 'base64url').toString('utf8'));
        raw[key] = value;
        return Buffer.from(JSON.stringify(raw)).toString('base64url');
      });
    fc.assert(
      fc.property(fc.oneof(hostileString, hugeString, json, tampered), fc.nat({ max: 40 }), (cursor, keys) => {
        refusedOrReturns(() => decodeSearchCursor(cursor, 'stream', keys));
      }),
    );
  });
});
