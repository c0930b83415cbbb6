import type { Redis } from 'ioredis';
import { type DeadLetterReason, splitDeadLetterFields } from '../dead-letter/dead-letter-record.js';
import type { DeadLetter } from '../dead-letter/dead-letter.service.js';
import { endBefore, startAfter } from '../keys/index.js';
import { isNoGroupError } from '../redis/errors/reply-errors.js';
import type { XPendingRow } from '../redis/replies.js';
import { type FieldPairs, readPayloads } from './entries.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import type { SearchWindow } from './search-window.js';
import { explainWrongType } from './served-streams.js';

/** What a search reads: a stream's entries, a group's pending entries, or a dead-letter stream. */
export type SearchTarget = { kind: 'stream' } | { kind: 'pending'; group: string } | { kind: 'dead-letters' };

/** A dead letter's record of where it came from and why it was parked (its fields apart). */
export type DeadLetterInfo = Omit<DeadLetter, 'id' | 'fields'>;

/** One entry as read, before it is redacted and matched. */
export interface ScannedEntry {
  id: string;
  /** The entry's fields (a dead letter's original fields); null when a pending entry's payload is gone. */
  fields: FieldPairs | null;
  pending?: { consumer: string; idleMs: number; deliveries: number };
  deadLetter?: DeadLetterInfo;
  /** Characters read for it (its id, field names and values): about the bytes Redis sent. */
  chars: number;
}

/** Reads one stream key of a search a page at a time, from just past the last id it handed out. */
export interface SearchSource {
  /** The stream (or partition stream) the key belongs to. */
  stream: string;
  /** The key read: the stream itself, or its dead-letter stream. */
  key: string;
  read(after: string | null, count: number): Promise<ScannedEntry[]>;
}

function charsOf(id: string, fields: readonly string[] | null): number {
  let chars = id.length;
  if (fields) for (const text of fields) chars += text.length;
  return chars;
}

function pairs(fields: string[]): FieldPairs {
  const out: FieldPairs = [];
  for (let i = 0; i + 1 < fields.length; i += 2) out.push([fields[i], fields[i + 1]]);
  return out;
}

function deadLetterEntry(id: string, fields: string[]): ScannedEntry {
  const { meta, original } = splitDeadLetterFields(fields);
  const deadLetter: DeadLetterInfo = {
    reason: (meta.reason ?? '') as DeadLetterReason,
    stream: meta.stream ?? '',
    originalId: meta.id ?? '',
    group: meta.group ?? '',
    consumer: meta.consumer ?? '',
    error: meta.error ?? '',
    errorClass: meta.error_class ?? '',
    deliveries: Number(meta.deliveries ?? 0),
    parkedAt: Number(meta.time ?? 0),
  };
  return { id, fields: pairs(original), deadLetter, chars: charsOf(id, fields) };
}

/**
 * The reader of one key: XRANGE (oldest first) or XREVRANGE (newest first) over the window for a
 * stream or a dead-letter stream; for a PEL, XPENDING's extended form (ids ascending: it has no
 * reverse order) and then one pipeline of `XRANGE id id` for the page's payloads.
 */
export function searchSource(
  redis: Redis,
  target: SearchTarget,
  stream: string,
  key: string,
  window: SearchWindow,
  newest: boolean,
): SearchSource {
  const startFrom = (after: string | null) => (after === null ? window.start : startAfter(after));
  const endAt = (after: string | null) => (after === null ? window.end : endBefore(after));
  const wrongType = (err: unknown) => explainWrongType(redis, err, key);
  if (target.kind === 'pending') {
    return {
      stream,
      key,
      async read(after, count) {
        const start = startFrom(after);
        if (start === null) return [];
        const rows = (await (redis.xpending as (...a: unknown[]) => Promise<unknown>)(
          key,
          target.group,
          start,
          window.end,
          count,
        ).catch((err: unknown) => {
          if (isNoGroupError(err)) throw new OperationError('not-found', OPERATIONS_MESSAGES.noGroup(key, target.group));
          return wrongType(err);
        })) as XPendingRow[];
        const payloads = await readPayloads(
          redis,
          key,
          rows.map(([id]) => id),
        );
        return rows.map(([id, consumer, idleMs, deliveries], i) => ({
          id,
          fields: payloads[i],
          pending: { consumer, idleMs: Number(idleMs), deliveries: Number(deliveries) },
          chars: charsOf(id, payloads[i]?.flat() ?? null) + consumer.length,
        }));
      },
    };
  }
  const toEntry =
    target.kind === 'dead-letters'
      ? ([id, fields]: [string, string[]]) => deadLetterEntry(id, fields)
      : ([id, fields]: [string, string[]]): ScannedEntry => ({ id, fields: pairs(fields), chars: charsOf(id, fields) });
  return {
    stream,
    key,
    async read(after, count) {
      if (newest) {
        const end = endAt(after);
        if (end === null) return [];
        return (await redis.xrevrange(key, end, window.start, 'COUNT', count).catch(wrongType)).map(toEntry);
      }
      const start = startFrom(after);
      return start === null ? [] : (await redis.xrange(key, start, window.end, 'COUNT', count).catch(wrongType)).map(toEntry);
    },
  };
}
