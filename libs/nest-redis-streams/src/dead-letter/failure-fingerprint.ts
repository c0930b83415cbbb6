import { createHash } from 'node:crypto';

/** What a failure is, with the parts that change from entry to entry folded away. */
export interface FailureCause {
  /** 12 hex digits: the same error class and pattern always give the same fingerprint. */
  fingerprint: string;
  errorClass: string;
  /** The message with numbers, ids and quoted values replaced by placeholders. */
  pattern: string;
}

/** A fingerprint as operators type it: 12 lower-case hex digits. */
export const FINGERPRINT_FORMAT = /^[0-9a-f]{12}$/;

/** Longest pattern kept: a message that differs only after this many characters is the same cause. */
const MAX_PATTERN = 300;

// Order matters: quoted values and the longer id shapes go first, so that a number inside a
// uuid, a stream id or a quoted value is not folded on its own into a different pattern.
const FOLDS: Array<[RegExp, string]> = [
  [/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '<q>'],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>'],
  [/\b\d{10,}-\d+\b/g, '<id>'],
  [/\b0x[0-9a-f]+\b/gi, '<hex>'],
  // Hex runs of 8 or more with at least one digit (hashes, object ids), not plain words like "deadbeef".
  [/\b(?=[0-9a-f]*\d)[0-9a-f]{8,}\b/gi, '<hex>'],
  // Words that mix letters and digits (ord_8f3k2, user42): ids, whatever their alphabet.
  [/\b(?=\w*[a-z_])(?=\w*\d)\w{4,}\b/gi, '<id>'],
  // A minus is a sign only where no word precedes it: o-17 keeps its dash, (-1) folds whole.
  [/(?:(?<![\w-])-)?\d+(?:[.,]\d+)*/g, '<n>'],
];

/** The message with what varies per entry folded into placeholders, whitespace collapsed. */
export function normaliseFailureMessage(message: string): string {
  let pattern = message;
  for (const [shape, placeholder] of FOLDS) pattern = pattern.replace(shape, placeholder);
  pattern = pattern.replace(/\s+/g, ' ').trim();
  return pattern.length > MAX_PATTERN ? `${pattern.slice(0, MAX_PATTERN)}…` : pattern;
}

/**
 * The cause of a dead letter: its error class and normalised message, and a short fingerprint of
 * both. A record without an error (a tombstone, an entry an operator parked without one) is
 * grouped by its reason instead, so that losses never hide among handler failures.
 */
export function failureCause(errorClass: string, message: string, reason = ''): FailureCause {
  const pattern = message || errorClass ? normaliseFailureMessage(message) : `(no error recorded: ${reason || 'unknown'})`;
  const fingerprint = createHash('sha256').update(`${errorClass}\n${pattern}`).digest('hex').slice(0, 12);
  return { fingerprint, errorClass, pattern };
}
