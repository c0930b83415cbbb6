import { fc, MAX_U64, streamIdParts } from '../../../../test/support/property-arbitraries.js';
import { endBefore, MAX_ID_PART, startAfter } from './stream-range.js';
import { compareEntryIds, compareStreamIds, minStreamId, nextStreamId } from './stream-id.js';

// Stream ids are pairs of unsigned 64-bit integers: every comparison must agree with BigInt's,
// including at 2^53 (where Number stops counting) and 2^64 - 1 (the last id Redis takes).

const sign = (n: number) => Math.sign(n);
const byBigInt = (a: { ms: bigint; seq: bigint }, b: { ms: bigint; seq: bigint }) =>
  a.ms !== b.ms ? (a.ms < b.ms ? -1 : 1) : a.seq !== b.seq ? (a.seq < b.seq ? -1 : 1) : 0;
const isValidId = (id: string) => {
  const match = /^(\d+)-(\d+)$/.exec(id);
  return match !== null && BigInt(match[1]) <= MAX_U64 && BigInt(match[2]) <= MAX_U64;
};

describe('stream ids (properties)', () => {
  it('orders ids as BigInt pairs do, in both comparators, at the edges of 64 bits', () => {
    fc.assert(
      fc.property(streamIdParts, streamIdParts, (a, b) => {
        const expected = byBigInt(a, b);
        expect(sign(compareStreamIds(a.id, b.id))).toBe(expected);
        expect(sign(compareEntryIds(a.id, b.id))).toBe(expected);
        expect(sign(compareStreamIds(b.id, a.id))).toBe(-expected || 0);
        expect(minStreamId(a.id, b.id)).toBe(expected <= 0 ? a.id : b.id);
      }),
    );
  });

  it('nextStreamId is the smallest valid id after an id, and never past 2^64 - 1', () => {
    fc.assert(
      fc.property(streamIdParts, streamIdParts, (id, other) => {
        const next = nextStreamId(id.id);
        expect(isValidId(next)).toBe(true);
        if (id.ms === MAX_U64 && id.seq === MAX_U64) {
          // Nothing follows the last id: it stands for itself (a MINID trim keeps that one entry).
          expect(next).toBe(id.id);
          return;
        }
        expect(compareStreamIds(id.id, next)).toBeLessThan(0);
        // No id lies strictly between an id and the next one.
        if (compareStreamIds(other.id, id.id) > 0) expect(compareStreamIds(other.id, next)).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it('startAfter / endBefore give an exclusive bound, except where no id can follow or precede', () => {
    fc.assert(
      fc.property(streamIdParts, ({ ms, seq, id }) => {
        const last = `${MAX_ID_PART}-${MAX_ID_PART}`;
        expect(startAfter(id)).toBe(id === last ? null : `(${id}`);
        expect(endBefore(id)).toBe(ms === 0n && seq === 0n ? null : `(${id}`);
      }),
    );
  });

  it('keeps the edge cases as examples', () => {
    const last = `${MAX_ID_PART}-${MAX_ID_PART}`;
    // Found by the property above: the id after the last one was 18446744073709551616-0, which
    // Redis refuses ("Invalid stream ID"), so a retention trim of a group at the end failed.
    expect(nextStreamId(last)).toBe(last);
    expect(nextStreamId(`5-${MAX_ID_PART}`)).toBe('6-0');
    expect(compareEntryIds('9007199254740993-0', '9007199254740992-0')).toBeGreaterThan(0);
  });
});
