import type { DeadLetter, DeadLetterService } from '../dead-letter/dead-letter.service.js';
import { type DeadLetterFilter, isTombstone, matches, readBound } from './dead-letters.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';

/** Where a record sits: its dead-letter id, the id it had in its source stream, when it was parked. */
export interface RecordPlace {
  id: string;
  originalId: string;
  parkedAt: number;
}

/** What a re-drive of the matching dead letters would do, read without changing anything. */
export interface RedrivePreview {
  filter: DeadLetterFilter;
  /** Records a re-drive would re-add to their source stream. */
  wouldRedrive: number;
  /** Matching tombstones: a re-drive leaves them (no payload). */
  tombstones: number;
  /** Oldest and newest record that would be re-driven (they run in this order, oldest first). */
  oldest: RecordPlace | null;
  newest: RecordPlace | null;
  /** Records per consumer group that would run them again. */
  groups: Record<string, number>;
  /** With a key field: its distinct values (the most frequent first, at most `maxKeys`) and the records without it. */
  keys: { field: string; distinct: number; top: Array<{ key: string; count: number }>; missing: number } | null;
  /** Records read; when `complete` is false the scan limit stopped the read and a re-drive covers these only. */
  scanned: number;
  /**
   * The newest record read up to (the newest when the dry run began, or the filter's `upTo`); null
   * when there was none. Pass it as `upTo` to re-drive exactly the records counted here.
   */
  upTo: string | null;
  total: number;
  complete: boolean;
}

const MAX_KEYS = 50;
const MAX_KEY_FIELD = 200;

/**
 * The ordering key of a dead letter: `field` of its JSON `data` (the transport's envelope), else
 * the entry field of that name (entries written by other producers); undefined when neither.
 */
export function orderingKeyOf(letter: Pick<DeadLetter, 'fields'>, field: string): string | undefined {
  const data = letter.fields.data;
  if (data !== undefined) {
    try {
      const value: unknown = (JSON.parse(data) as Record<string, unknown> | null)?.[field];
      if (value !== undefined && value !== null) return typeof value === 'string' ? value : JSON.stringify(value);
    } catch {
      // Not JSON (another codec): the entry field is all there is.
    }
  }
  return Object.hasOwn(letter.fields, field) ? letter.fields[field] : undefined;
}

export function checkKeyField(field: string | undefined): string | undefined {
  if (field === undefined) return undefined;
  if (typeof field !== 'string' || field.length === 0 || field.length > MAX_KEY_FIELD) {
    throw new OperationError('bad-request', OPERATIONS_MESSAGES.badKeyField(field));
  }
  return field;
}

/**
 * A dry run of a filtered re-drive: reads the dead letters oldest first (at most `scanLimit`, up to
 * the newest when it began: as the re-drive itself would) and says how many it would re-drive,
 * which keys and groups they belong to, and the oldest and newest. A cause that matches nothing is
 * refused as not found.
 */
export async function previewRedrive(
  service: DeadLetterService,
  dlq: string,
  filter: DeadLetterFilter,
  options: { scanLimit: number; keyField?: string; signal?: AbortSignal },
): Promise<RedrivePreview> {
  const preview: RedrivePreview = {
    filter,
    wouldRedrive: 0,
    tombstones: 0,
    oldest: null,
    newest: null,
    groups: Object.create(null) as Record<string, number>,
    keys: null,
    scanned: 0,
    upTo: await readBound(service, dlq, filter.upTo),
    total: await service.count(dlq),
    complete: false,
  };
  const keyCounts = new Map<string, number>();
  let missing = 0;
  let after: string | undefined;
  let ended = preview.upTo === null;
  while (!ended && preview.scanned < options.scanLimit) {
    options.signal?.throwIfAborted();
    const count = Math.min(500, options.scanLimit - preview.scanned);
    const page = await service.list(dlq, { after, count, upTo: preview.upTo! });
    preview.scanned += page.items.length;
    after = page.items.at(-1)?.id ?? after;
    for (const letter of page.items) {
      if (!matches(letter, filter)) continue;
      if (isTombstone(letter)) {
        preview.tombstones += 1;
        continue;
      }
      preview.wouldRedrive += 1;
      const place = { id: letter.id, originalId: letter.originalId ?? '', parkedAt: letter.parkedAt };
      preview.oldest ??= place;
      preview.newest = place;
      preview.groups[letter.group ?? ''] = (preview.groups[letter.group ?? ''] ?? 0) + 1;
      if (options.keyField === undefined) continue;
      const key = orderingKeyOf(letter, options.keyField);
      if (key === undefined) missing += 1;
      else keyCounts.set(key, (keyCounts.get(key) ?? 0) + 1);
    }
    ended = page.next === null;
  }
  preview.complete = ended || preview.scanned >= preview.total;
  if (options.keyField !== undefined) {
    const top = [...keyCounts].map(([key, count]) => ({ key, count })).sort((a, b) => b.count - a.count);
    preview.keys = { field: options.keyField, distinct: keyCounts.size, top: top.slice(0, MAX_KEYS), missing };
  }
  if (filter.cause && preview.wouldRedrive + preview.tombstones === 0) {
    throw new OperationError('not-found', OPERATIONS_MESSAGES.noSuchCause(dlq, filter.cause, preview.scanned, preview.complete));
  }
  return preview;
}
