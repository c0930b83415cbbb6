// Generators and settings shared by the property-based unit specs (libs/**/*.property.spec.ts).
// fast-check picks a fresh seed per run and prints it, with the shrunk counterexample and its
// path, when a property fails; FC_SEED and FC_PATH replay exactly that run (docs/development.md).
import fc from 'fast-check';

const replaySeed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
fc.configureGlobal({
  // Modest: the whole unit tier must stay fast; each property runs well under a second.
  numRuns: Number(process.env.FC_NUM_RUNS ?? 200),
  ...(replaySeed === undefined ? {} : { seed: replaySeed, path: process.env.FC_PATH, endOnFailure: true }),
});

/** Any UTF-16 code unit: lone surrogates, NUL, C0/C1 control characters included. */
export const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));

/** Characters that break naive code: quotes, escapes, separators, surrogates, U+FFFD, line separators. */
export const trickyChar = fc.constantFrom(
  '\0',
  '\u0001',
  '\u001b',
  '\u007f',
  '\u0085',
  '\t',
  '\n',
  '\r',
  ' ',
  '"',
  "'",
  '`',
  '\\',
  '-',
  ':',
  '{',
  '}',
  '(',
  '[',
  '\ud800',
  '\udbff',
  '\udc00',
  '\udfff',
  '\ud83d\ude00',
  '\ufffd',
  '\ufeff',
  '\u2028',
  '\u200b',
  '\u0301',
  'é',
  '漢',
);

/** Strings of every kind a hostile producer or operator can send: empty, unicode, control characters, lone surrogates. */
export const hostileString = fc.oneof(
  fc.constant(''),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: codeUnit }),
  fc.string({ unit: trickyChar }),
  fc.string({ unit: fc.oneof(trickyChar, fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 1 })) }),
);

/** A short piece repeated into a long string (up to ~60 K characters): cheap to generate and to shrink. */
export const hugeString = fc
  .tuple(fc.string({ unit: fc.oneof(trickyChar, codeUnit), minLength: 1, maxLength: 6 }), fc.integer({ min: 500, max: 10_000 }))
  .map(([piece, times]) => piece.repeat(times));

/** The largest part of a stream id, 2^64 - 1. */
export const MAX_U64 = 2n ** 64n - 1n;

/** An unsigned 64-bit integer, biased towards the edges (0, 1, 2^53, 8.64e15, 2^63, 2^64 - 1). */
export const u64 = fc.oneof(
  fc.bigInt({ min: 0n, max: MAX_U64 }),
  fc.constantFrom(
    0n,
    1n,
    2n ** 53n - 1n,
    2n ** 53n,
    8_640_000_000_000_000n,
    8_640_000_000_000_001n,
    2n ** 63n,
    MAX_U64 - 1n,
    MAX_U64,
  ),
  fc.bigInt({ min: 0n, max: 2_000_000_000_000n }),
);

/** A stream id as Redis writes it (`<ms>-<seq>`, no leading zeros), with both parts. */
export const streamIdParts = fc
  .oneof(
    fc.tuple(u64, u64),
    // The first and last ids, and the ends of a millisecond: rare in random pairs, so drawn on purpose.
    fc.constantFrom<[bigint, bigint]>(
      [0n, 0n],
      [0n, 1n],
      [MAX_U64, MAX_U64],
      [MAX_U64, 0n],
      [1n, MAX_U64],
      [MAX_U64 - 1n, MAX_U64],
    ),
  )
  .map(([ms, seq]) => ({ ms, seq, id: `${ms}-${seq}` }));

export { fc };
