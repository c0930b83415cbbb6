import { fc, hostileString } from '../../../../test/support/property-arbitraries.js';
import { intOption, parse } from './cli-args.js';
import { UsageError } from './errors/usage.error.js';

// Any command line is parsed or refused with a UsageError (exit code 2), never another error.

const arg = fc.oneof(
  hostileString,
  fc.constantFrom('--url', '--json', '--count', '--count=', '-h', '--', '-', '--help=1', '--no-json', '-x'),
);

describe('CLI arguments (properties)', () => {
  it('parses any argv or refuses it with a UsageError', () => {
    fc.assert(
      fc.property(fc.array(arg, { maxLength: 8 }), (argv) => {
        try {
          parse('list', argv, { count: { type: 'string' } });
        } catch (err) {
          expect(err).toBeInstanceOf(UsageError);
        }
      }),
    );
  });

  it('reads a whole number option exactly, or refuses it naming the value', () => {
    fc.assert(
      fc.property(fc.oneof(hostileString, fc.bigInt({ min: 0n, max: 2n ** 64n }).map(String)), fc.nat({ max: 5 }), (raw, min) => {
        try {
          const n = intOption({ positionals: [], values: { count: raw } }, 'count', min);
          expect(Number.isSafeInteger(n) && (n as number) >= min && String(n) === raw.replace(/^0+(?=\d)/, '')).toBe(true);
        } catch (err) {
          expect(err).toBeInstanceOf(UsageError);
          expect((err as Error).message).toContain('--count');
        }
      }),
    );
  });
});
