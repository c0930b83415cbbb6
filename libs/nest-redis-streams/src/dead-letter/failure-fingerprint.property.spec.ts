import { fc, hostileString, hugeString } from '../../../../test/support/property-arbitraries.js';
import { failureCause, FINGERPRINT_FORMAT } from './failure-fingerprint.js';
import { MAX_PATTERN, MAX_SCANNED_MESSAGE, scanFailureMessage } from './failure-message-scanner.js';

// A failure's cause must not change with the values a message carries (ids, numbers, quoted
// values, addresses), and finding it must cost work bounded by the scanned prefix, whatever the text.

/** Message templates around one varying value, with the kind of value each slot folds. */
const template = fc.constantFrom(
  ['Order ', ' not found'],
  ['timeout after ', 'ms talking to db'],
  ['timeout after ', ' ms talking to db'],
  ['duplicate key value violates unique constraint "orders_pkey": ', ''],
  ['user ', ' is over quota (', ')'].slice(0, 2),
  ['', ''],
);
/** Each kind of value a message folds; a pair is drawn from one kind (a number for a number…). */
const kinds = [
  fc.nat().map(String),
  fc.integer({ min: -1e9, max: -1 }).map(String),
  fc.uuid(),
  fc.bigInt({ min: 10n ** 12n, max: 10n ** 14n }).chain((ms) => fc.nat().map((seq) => `${ms}-${seq}`)),
  fc.stringMatching(/^[0-9a-f]{8,40}$/).filter((s) => /[0-9]/.test(s) && /[a-f]/.test(s)),
  // A quoted value as a program writes it: a backslash escaped, so the closing quote closes.
  fc
    .string({ unit: fc.constantFrom('a', 'b', ' ', '1', 'é', '\\', '\\"') })
    .map((s) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`),
  // The scanner's documented address characters (RFC 5322 allows more, e.g. `!`, which it leaves as text).
  fc.emailAddress().filter((email) => /^[A-Za-z0-9_.+-]+@/.test(email)),
];
const samePair = fc.nat({ max: kinds.length - 1 }).chain((k) => fc.tuple(kinds[k], kinds[k]));

describe('failure fingerprints (properties)', () => {
  it('gives the same cause whatever value a message folds', () => {
    fc.assert(
      fc.property(template, samePair, (parts, [a, b]) => {
        const [head, tail] = parts;
        // A unit glued to the value (`5ms`) belongs to numbers; any other value glued to letters is another word.
        fc.pre(!/^[A-Za-z]/.test(tail) || /^-?\d+$/.test(a));
        const one = failureCause('Error', `${head}${a}${tail}`);
        const two = failureCause('Error', `${head}${b}${tail}`);
        expect(two.pattern).toBe(one.pattern);
        expect(two.fingerprint).toBe(one.fingerprint);
      }),
    );
  });

  it('reads any message in bounded work and returns a bounded pattern and a well-formed fingerprint', () => {
    fc.assert(
      fc.property(fc.oneof(hostileString, hugeString), hostileString, (message, errorClass) => {
        const scanned = scanFailureMessage(message);
        expect(scanned.steps).toBeLessThanOrEqual(8 * MAX_SCANNED_MESSAGE);
        expect(scanned.steps).toBeLessThanOrEqual(8 * Math.max(1, message.length));
        expect(scanned.pattern.length).toBeLessThanOrEqual(MAX_PATTERN + 1);
        expect(scanned.cut).toBe(message.length > MAX_SCANNED_MESSAGE);
        const cause = failureCause(errorClass, message);
        expect(cause.fingerprint).toMatch(FINGERPRINT_FORMAT);
        expect(failureCause(errorClass, message)).toEqual(cause);
      }),
      // Each run scans up to 4,096 characters: fewer runs keep it well under a second.
      { numRuns: 60 },
    );
  });

  it('ignores what follows the scanned prefix', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: MAX_SCANNED_MESSAGE, maxLength: MAX_SCANNED_MESSAGE }),
        hostileString,
        hostileString,
        (head, x, y) => {
          expect(failureCause('E', head + x + 'z').fingerprint).toBe(failureCause('E', head + y + 'z').fingerprint);
        },
      ),
      { numRuns: 50 },
    );
  });
});
