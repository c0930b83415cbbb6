import { DeadLetterReason } from '../dead-letter-reason.js';
import { compareStreamIds } from '../keys/index.js';
import type { DeadLetter, DeadLetterService } from '../dead-letter/dead-letter.service.js';
import { FINGERPRINT_FORMAT } from '../dead-letter/failure-fingerprint.js';
import { fingerprintOf } from './failure-groups.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import { parseStreamId } from './stream-position.js';

/** Which dead letters an operation applies to; an empty filter matches all. */
export interface DeadLetterFilter {
  reason?: string;
  group?: string;
  /** The fingerprint of a failure group (see `failureGroups`). */
  cause?: string;
  /**
   * The last dead-letter id to read (inclusive), e.g. the `upTo` of a dry run, so that the re-drive
   * reads the set the dry run counted. A bulk re-drive and a dry run without it stop at the newest
   * record when they began.
   */
  upTo?: string;
}

/** Tombstones: records of entries lost to trimming, with no payload to re-drive. */
export const TOMBSTONE_REASONS: readonly string[] = [DeadLetterReason.PAYLOAD_TRIMMED, DeadLetterReason.TRIMMED_UNDELIVERED];

export function isTombstone(letter: Pick<DeadLetter, 'reason'>): boolean {
  return TOMBSTONE_REASONS.includes(letter.reason);
}

export function matches(letter: DeadLetter, filter: DeadLetterFilter): boolean {
  return (
    (!filter.reason || letter.reason === filter.reason) &&
    (!filter.group || letter.group === filter.group) &&
    (!filter.cause || fingerprintOf(letter) === filter.cause)
  );
}

/** Refuses a filter naming a cause that is not a fingerprint, or a bound that is not an id, before anything is read. */
export function checkFilter(filter: DeadLetterFilter): DeadLetterFilter {
  if (filter.cause !== undefined && !FINGERPRINT_FORMAT.test(filter.cause)) {
    throw new OperationError('bad-request', OPERATIONS_MESSAGES.badFingerprint(filter.cause));
  }
  if (filter.upTo !== undefined) parseStreamId(filter.upTo, 'upTo');
  return filter;
}

/**
 * Where a read that re-drives what it reads must stop: the newest record when it begins (or the
 * caller's `upTo`, when older). Without it, the records its own re-drives park again are read as
 * further records and re-driven again, up to the scan limit. Null: nothing to read.
 */
export async function readBound(service: DeadLetterService, dlq: string, upTo?: string): Promise<string | null> {
  const newest = await service.lastId(dlq);
  if (newest === null || upTo === undefined) return newest;
  return compareStreamIds(upTo, newest) < 0 ? upTo : newest;
}

/** A filtered page; `scanned` records were read to fill it (bounded by the scan limit). */
export interface FilteredPage {
  items: DeadLetter[];
  next: string | null;
  scanned: number;
}

/**
 * A page of the dead letters that match `filter`, read through `DeadLetterService.list` pages until
 * `count` match or `scanLimit` records were read (then `next` says where to go on); `signal` (the
 * request ended) stops it between pages.
 */
export async function listDeadLetters(
  service: DeadLetterService,
  dlq: string,
  filter: DeadLetterFilter,
  options: { after?: string; count: number; scanLimit: number; signal?: AbortSignal },
): Promise<FilteredPage> {
  const items: DeadLetter[] = [];
  let after = options.after;
  let scanned = 0;
  while (items.length < options.count && scanned < options.scanLimit) {
    options.signal?.throwIfAborted();
    const page = await service.list(dlq, { after, count: Math.min(500, options.scanLimit - scanned), upTo: filter.upTo });
    for (const letter of page.items) {
      scanned += 1;
      after = letter.id;
      if (matches(letter, filter)) items.push(letter);
      if (items.length === options.count) return { items, next: after, scanned };
    }
    if (page.next === null) return { items, next: null, scanned };
  }
  return { items, next: after ?? null, scanned };
}

/** What a bulk re-drive did. */
export interface RedriveReport {
  /** Dead-letter id → new id in the source stream. */
  redriven: Array<{ id: string; newId: string }>;
  /** Tombstones among the matches: left in place (nothing to re-drive). */
  tombstones: number;
  /** Records that failed (message per id); the others went on. */
  failed: Array<{ id: string; error: string }>;
  /** True when the scan limit stopped it: run it again for the rest. */
  more: boolean;
  /** Records read. */
  scanned: number;
  /** The last dead-letter id it read up to (what existed when it began, or the filter's `upTo`); null: none. */
  upTo: string | null;
}

/** Re-drives one dead letter; refuses tombstones and unknown ids with a clear message. */
export async function redriveOne(service: DeadLetterService, dlq: string, id: string): Promise<{ id: string; newId: string }> {
  const letter = await service.inspect(dlq, id);
  if (!letter) throw new OperationError('not-found', OPERATIONS_MESSAGES.noDeadLetter(dlq, id));
  if (isTombstone(letter)) throw new OperationError('refused', OPERATIONS_MESSAGES.tombstone(id, letter.reason));
  const newId = await service.redrive(dlq, id);
  if (!newId) throw new OperationError('not-found', OPERATIONS_MESSAGES.noDeadLetter(dlq, id));
  return { id, newId };
}

/**
 * Re-drives every dead letter that matches `filter` (all of them for an empty filter), oldest first,
 * among the records that existed when it began (see `readBound`): the set its dry run counts.
 */
export async function redriveMatching(
  service: DeadLetterService,
  dlq: string,
  filter: DeadLetterFilter,
  scanLimit: number,
): Promise<RedriveReport> {
  const upTo = await readBound(service, dlq, filter.upTo);
  const report: RedriveReport = { redriven: [], tombstones: 0, failed: [], more: false, scanned: 0, upTo };
  if (upTo === null) return report;
  let after: string | undefined;
  let scanned = 0;
  while (scanned < scanLimit) {
    const page = await service.list(dlq, { after, count: Math.min(500, scanLimit - scanned), upTo });
    for (const letter of page.items) {
      scanned += 1;
      report.scanned = scanned;
      after = letter.id;
      if (!matches(letter, filter)) continue;
      if (isTombstone(letter)) {
        report.tombstones += 1;
        continue;
      }
      try {
        const newId = await service.redrive(dlq, letter.id);
        if (newId) report.redriven.push({ id: letter.id, newId });
      } catch (err) {
        report.failed.push({ id: letter.id, error: err instanceof Error ? err.message : String(err) });
      }
    }
    if (page.next === null) return report;
  }
  report.more = true;
  return report;
}
