import type { Cluster, Redis } from 'ioredis';
import { handlerErrorsKey } from '../keys/index.js';

/**
 * The last handler errors of a group's entries, for the console's "why is this pending": a stream
 * beside the consumed stream (same hash slot), capped (`MAXLEN ~`) and expiring, so it costs at
 * most `maxRecords` short records per group and disappears when nothing fails for `ttlMs`.
 */
export const HANDLER_ERRORS = {
  maxRecords: 500,
  ttlMs: 24 * 60 * 60 * 1000,
  /** Longest message kept (characters). */
  maxMessage: 300,
};

/** One failed delivery of an entry. */
export interface HandlerErrorRecord {
  /** The entry's id in its stream. */
  id: string;
  /** When it failed (ms since epoch, the failing instance's clock). */
  at: number;
  consumer: string;
  /** The delivery that failed (1 for the first). */
  deliveries: number;
  errorClass: string;
  message: string;
}

/** Appends one failure (XADD MAXLEN ~ and PEXPIRE, one round trip); the caller decides what a failure to record means. */
export async function recordHandlerError(
  redis: Redis | Cluster,
  stream: string,
  group: string,
  record: Omit<HandlerErrorRecord, 'at'>,
): Promise<void> {
  const key = handlerErrorsKey(stream, group);
  const fields = ['id', record.id, 'at', String(Date.now()), 'consumer', record.consumer];
  fields.push('deliveries', String(record.deliveries), 'class', record.errorClass.slice(0, 100));
  fields.push('message', record.message.slice(0, HANDLER_ERRORS.maxMessage));
  const replies = await redis
    .pipeline()
    .xadd(key, 'MAXLEN', '~', HANDLER_ERRORS.maxRecords, '*', ...fields)
    .pexpire(key, HANDLER_ERRORS.ttlMs)
    .exec();
  const failed = replies?.find(([err]) => err);
  if (failed) throw failed[0];
}

/** The newest error of each of `ids` (absent: none recorded, or it expired or was pushed out). */
export async function readHandlerErrors(
  redis: Redis,
  stream: string,
  group: string,
  ids: readonly string[],
): Promise<Map<string, HandlerErrorRecord>> {
  const found = new Map<string, HandlerErrorRecord>();
  if (ids.length === 0) return found;
  const wanted = new Set(ids);
  const rows = await redis.xrevrange(handlerErrorsKey(stream, group), '+', '-', 'COUNT', HANDLER_ERRORS.maxRecords * 2);
  for (const [, flat] of rows) {
    const f = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) f.set(flat[i], flat[i + 1]);
    const id = f.get('id') ?? '';
    if (!wanted.has(id) || found.has(id)) continue;
    found.set(id, {
      id,
      at: Number(f.get('at') ?? 0),
      consumer: f.get('consumer') ?? '',
      deliveries: Number(f.get('deliveries') ?? 0),
      errorClass: f.get('class') ?? '',
      message: f.get('message') ?? '',
    });
  }
  return found;
}
