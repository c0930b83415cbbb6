import { DeadLetterReason } from '../dead-letter-reason.js';
import type { DeadLetter, DeadLetterService } from '../dead-letter/dead-letter.service.js';
import { FINGERPRINT_FORMAT } from '../dead-letter/failure-fingerprint.js';
import { fingerprintOf } from './failure-groups.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';

/** Which dead letters an operation applies to; an empty filter matches all. */
export interface DeadLetterFilter {
  reason?: string;
  group?: string;
  /** The fingerprint of a failure group (see `failureGroups`). */
  cause?: string;
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

/** Refuses a filter naming a cause that is not a fingerprint, before anything is read. */
export function checkFilter(filter: DeadLetterFilter): DeadLetterFilter {
  if (filter.cause !== undefined && !FINGERPRINT_FORMAT.test(filter.cause)) {
    throw new OperationError('bad-request', OPERATIONS_MESSAGES.badFingerprint(filter.cause));
  }
  return filter;
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
    const page = await service.list(dlq, { after, count: Math.min(500, options.scanLimit - scanned) });
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

/** Re-drives every dead letter that matches `filter` (all of them for an empty filter), oldest first. */
export async function redriveMatching(
  service: DeadLetterService,
  dlq: string,
  filter: DeadLetterFilter,
  scanLimit: number,
): Promise<RedriveReport> {
  const report: RedriveReport = { redriven: [], tombstones: 0, failed: [], more: false, scanned: 0 };
  let after: string | undefined;
  let scanned = 0;
  while (scanned < scanLimit) {
    const page = await service.list(dlq, { after, count: Math.min(500, scanLimit - scanned) });
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
