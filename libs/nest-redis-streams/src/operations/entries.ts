import type { Redis } from 'ioredis';
import { isNoGroupError } from '../redis/errors/reply-errors.js';
import type { XPendingRow } from '../redis/replies.js';
import { type HandlerErrorRecord, readHandlerErrors } from '../recovery/handler-errors.js';
import {
  type RetryWait,
  parseRetryWaits,
  queueRetryWaitProbe,
  queueRetryWaits,
  readRetryWaits,
  realIdles,
  timeOf,
} from '../recovery/retry-waits.js';
import { startAfter } from '../keys/index.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import { MAX_SEQ, idTime } from './stream-position.js';

/** Field names and values in stored order (duplicates kept; a name like `__proto__` stays data). */
export type FieldPairs = Array<[name: string, value: string]>;

/** One entry of a group's PEL with its payload. */
export interface PendingEntry {
  id: string;
  /** Milliseconds part of the id: when it was added. */
  time: number;
  consumer: string;
  /** Since its last delivery (or lease renewal, or failure): not the back-off's backdated idle time. */
  idleMs: number;
  /** When it was last delivered (or its lease renewed, or its handler failed): now less `idleMs`. */
  lastDeliveryAt: number;
  /**
   * Waiting for a retry: when its back-off is over and any consumer may retry it (ms since the
   * epoch, Redis' clock); null when it is not waiting for one (see recovery/retry-waits.ts).
   */
  retryAt: number | null;
  deliveries: number;
  /** The envelope's `published_at` (ms since epoch); null for an entry without one. */
  publishedAt: number | null;
  /** Its last handler failure, as the consumer recorded it (bounded, expiring: may be gone); null if none. */
  lastError: HandlerErrorRecord | null;
  /** The entry's fields; null when the payload is gone (trimmed or deleted while pending). */
  fields: FieldPairs | null;
}

/** A page of a PEL or of a stream; pass `next` as `after` to read on, null at the end. */
export interface Page<T> {
  items: T[];
  next: string | null;
}

/** Where to read: after a cursor, inside a time range (ms, inclusive), optionally one consumer. */
export interface RangeQuery {
  after?: string;
  from?: number;
  to?: number;
  count: number;
}

/** One stream entry, with where it is pending when a group is named. */
export interface StreamEntry {
  id: string;
  time: number;
  fields: FieldPairs | null;
  /** The group's PEL row for it (idle as in `PendingEntry`); null when not pending there (or no group was asked about). */
  pending: { consumer: string; idleMs: number; deliveries: number; retryAt: number | null } | null;
}

/** The range to read; null when it is empty by construction (after the last possible id). */
function bounds(query: RangeQuery): [start: string, end: string] | null {
  const start = query.after ? startAfter(query.after) : query.from !== undefined ? `${query.from}-0` : '-';
  const end = query.to !== undefined ? `${query.to}-${MAX_SEQ}` : '+';
  return start === null ? null : [start, end];
}

function toPairs(fields: string[] | null | undefined): FieldPairs | null {
  if (!fields) return null;
  const pairs: FieldPairs = [];
  for (let i = 0; i + 1 < fields.length; i += 2) pairs.push([fields[i], fields[i + 1]]);
  return pairs;
}

/** The envelope's `published_at`, when the entry has a valid one. */
function publishedAt(fields: FieldPairs | null): number | null {
  const raw = fields?.find(([name]) => name === 'published_at')?.[1];
  const ms = raw === undefined ? Number.NaN : Number(raw);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : null;
}

function groupMissing(err: unknown, stream: string, group: string): never {
  if (isNoGroupError(err)) throw new OperationError('not-found', OPERATIONS_MESSAGES.noGroup(stream, group));
  throw err;
}

/**
 * A page of the group's pending entries, oldest id first, with their payloads: one XPENDING, then
 * one pipeline of XRANGE id id for the page (the PEL itself holds no payload).
 */
export async function readPendingPage(
  redis: Redis,
  stream: string,
  group: string,
  query: RangeQuery & { consumer?: string },
): Promise<Page<PendingEntry>> {
  const range = bounds(query);
  if (!range) return { items: [], next: null };
  const args: Array<string | number> = [...range, query.count];
  if (query.consumer) args.push(query.consumer);
  const read = redis.pipeline().call('XPENDING', stream, group, ...args);
  queueRetryWaitProbe(read, stream, group);
  const [[err, reply], timeReply, waitingReply] = ((await read.exec()) ?? []) as Array<[Error | null, unknown]>;
  if (err) groupMissing(err, stream, group);
  const rows = reply as XPendingRow[];
  const ids = rows.map(([id]) => id);
  const redisTime = timeOf(timeReply);
  const now = redisTime ?? Date.now();
  const waiting = ids.length > 0 && !waitingReply[0] && Number(waitingReply[1]) > 0;
  const [payloads, errors, waits] = await Promise.all([
    readPayloads(redis, stream, ids),
    // A user without XREVRANGE on the errors key (an older ACL) still gets the page.
    readHandlerErrors(redis, stream, group, ids).catch(() => new Map<string, HandlerErrorRecord>()),
    waiting ? readRetryWaits(redis, stream, group, ids) : new Map<string, RetryWait>(),
  ]);
  const idles = realIdles(rows, redisTime, waits);
  const items = rows.map(([id, consumer, , deliveries], i) => ({
    id,
    time: idTime(id),
    consumer,
    idleMs: idles[i].idleMs,
    lastDeliveryAt: now - idles[i].idleMs,
    retryAt: idles[i].retryAt,
    deliveries: Number(deliveries),
    publishedAt: publishedAt(payloads[i]),
    lastError: errors.get(id) ?? null,
    fields: payloads[i],
  }));
  return { items, next: items.length === query.count ? items[items.length - 1].id : null };
}

/** A page of the stream's entries (XRANGE), for browsing by time. */
export async function readEntryPage(redis: Redis, stream: string, query: RangeQuery): Promise<Page<StreamEntry>> {
  const range = bounds(query);
  if (!range) return { items: [], next: null };
  const entries = await redis.xrange(stream, ...range, 'COUNT', query.count);
  const items = entries.map(([id, fields]) => ({ id, time: idTime(id), fields: toPairs(fields), pending: null }));
  return { items, next: items.length === query.count ? items[items.length - 1].id : null };
}

/** One entry by id, with its PEL row in `group` when given; null when neither payload nor PEL row exists. */
export async function readEntry(redis: Redis, stream: string, id: string, group?: string): Promise<StreamEntry | null> {
  const pipeline = redis.pipeline().xrange(stream, id, id);
  if (group) {
    pipeline.xpending(stream, group, id, id, 1).time();
    queueRetryWaits(pipeline, stream, group, [id]);
  }
  const [[rangeErr, range], pendingReply, timeReply, waitReply] = ((await pipeline.exec()) ?? []) as Array<
    [Error | null, unknown]
  >;
  if (rangeErr) throw rangeErr;
  if (pendingReply?.[0]) groupMissing(pendingReply[0], stream, group ?? '');
  const [entry] = range as Array<[string, string[] | null]>;
  const [row] = (pendingReply?.[1] ?? []) as XPendingRow[];
  if (!entry && !row) return null;
  const idle = row ? realIdles([row], timeOf(timeReply), parseRetryWaits([id], waitReply))[0] : null;
  return {
    id,
    time: idTime(id),
    fields: toPairs(entry?.[1]),
    pending: row && idle ? { consumer: row[1], idleMs: idle.idleMs, deliveries: Number(row[3]), retryAt: idle.retryAt } : null,
  };
}

/** The payloads of `ids` in one pipeline; null for an id whose entry is gone. */
export async function readPayloads(redis: Redis, stream: string, ids: readonly string[]): Promise<Array<FieldPairs | null>> {
  if (ids.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.xrange(stream, id, id);
  const replies = (await pipeline.exec()) ?? [];
  return ids.map((_, i) => {
    const [err, entries] = replies[i] ?? [new Error('no reply'), null];
    if (err) throw err;
    return toPairs((entries as Array<[string, string[] | null]>)[0]?.[1]);
  });
}
