import { createHash } from 'node:crypto';
import { scanFailureMessage } from './failure-message-scanner.js';

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

/**
 * The message with what varies per entry folded into placeholders, whitespace collapsed: see
 * `scanFailureMessage` for the folds. Reads at most `MAX_SCANNED_MESSAGE` characters, in work
 * linear in them, however hostile the message.
 */
export function normaliseFailureMessage(message: string): string {
  return scanFailureMessage(message).pattern;
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
