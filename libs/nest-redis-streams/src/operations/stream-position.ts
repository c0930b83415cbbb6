import { MAX_ID_PART } from '../keys/index.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_DEFAULTS } from './operations.constants.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';

const ID = /^(\d{1,20})(?:-(\d{1,20}))?$/;

/** The largest sequence number of a millisecond: `<ms>-MAX_SEQ` is the last id of that ms. */
export const MAX_SEQ = MAX_ID_PART;
const MAX_PART = BigInt(MAX_SEQ);

/**
 * `1700000000000-3` as is, `1700000000000` as `1700000000000-0`; anything else is refused, and so
 * is a part past 2^64 - 1 (twenty digits pass the pattern; Redis would answer "Invalid stream ID").
 */
export function parseStreamId(value: string, what = 'An id'): string {
  const text = String(value ?? '').trim();
  const match = ID.exec(text);
  if (!match) throw new OperationError('bad-request', OPERATIONS_MESSAGES.badId(what, String(value)));
  const ms = match[1];
  const seq = match[2] ?? '0';
  if (BigInt(ms) > MAX_PART || BigInt(seq) > MAX_PART)
    throw new OperationError('bad-request', OPERATIONS_MESSAGES.idOutOfRange(what, text, MAX_SEQ));
  // Without leading zeros: the id as Redis writes it, so that ids compare and print alike.
  return `${BigInt(ms)}-${BigInt(seq)}`;
}

// An ISO 8601 date, optionally with a time and a zone: Date.parse alone also takes "-1", "1,2"
// or "May 1" (all read as dates in 2001), which would move a cursor decades back.
const ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/i;

/**
 * Milliseconds since the epoch from digits or an ISO date; past Number.MAX_SAFE_INTEGER the
 * digits no longer say one millisecond, so they are refused, and so is any other text.
 */
export function parseTime(value: unknown): number {
  const text = typeof value === 'string' || typeof value === 'number' ? String(value).trim() : String(JSON.stringify(value));
  const ms =
    typeof value === 'number'
      ? Math.floor(value)
      : /^\d+$/.test(text)
        ? Number(text)
        : ISO_DATE.test(text)
          ? Date.parse(text)
          : Number.NaN;
  if (!Number.isSafeInteger(ms) || ms < 0) throw new OperationError('bad-request', OPERATIONS_MESSAGES.badTime(text));
  return ms;
}

/** The last id before time `ms`: a group cursor set there delivers every entry from `ms` on. */
export function idBeforeTime(ms: number): string {
  return ms <= 0 ? '0-0' : `${ms - 1}-${MAX_SEQ}`;
}

/** Ids are times: the millisecond part of an entry id. */
export function idTime(id: string): number {
  return Number(id.split('-')[0]);
}

/** Checks a page size from user input. */
export function parseCount(value: unknown, fallback: number, max: number, what = 'count'): number {
  if (value === undefined || value === null || value === '') return fallback;
  const n = typeof value === 'number' ? value : Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw new OperationError('bad-request', OPERATIONS_MESSAGES.badCount(what, value, max));
  return n;
}

/** Checks a stream, group or consumer name from user input. */
export function requireName(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0)
    throw new OperationError('bad-request', OPERATIONS_MESSAGES.badName(what, value));
  return value;
}

/** A partition count from user input: a whole number from 1 to the most a stream is split into (absent stays absent). */
export function checkPartitions<T extends number | undefined>(partitions: T): T {
  const max = OPERATIONS_DEFAULTS.maxPartitions;
  if (partitions !== undefined && !(Number.isSafeInteger(partitions) && partitions >= 1 && partitions <= max))
    throw new OperationError('bad-request', OPERATIONS_MESSAGES.badPartitions(partitions, max));
  return partitions;
}
