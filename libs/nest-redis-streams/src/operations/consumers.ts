import type { Redis } from 'ioredis';
import { isNoGroupError } from '../redis/errors.js';
import { type XPendingRow, pairsToObject } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { OperationError } from './operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';

/** A consumer of a group as XINFO CONSUMERS reports it, with the first ids it holds. */
export interface ConsumerInfo {
  name: string;
  pending: number;
  /** Since its last attempted interaction (read or claim). */
  idleMs: number;
  /** Since its last successful read (Redis 7.2+); null on older servers. */
  inactiveMs: number | null;
  /** Whether it counts as running: seen within `activeConsumerMs`. */
  active: boolean;
  /** The oldest ids in its PEL (up to `sample`). */
  holds: string[];
}

/** How many held ids are listed per consumer. */
const HELD_SAMPLE = 10;
/** Ids moved per XCLAIM during a hand-over. */
const HAND_OVER_BATCH = 500;

function noGroup(err: unknown, stream: string, group: string): never {
  // XINFO CONSUMERS on a missing stream answers "ERR no such key", not NOGROUP.
  if (isNoGroupError(err) || /no such key/i.test(String(err)))
    throw new OperationError('not-found', OPERATIONS_MESSAGES.noGroup(stream, group));
  throw err;
}

/** The group's consumers with what they hold, in two round trips. */
export async function listConsumers(
  redis: Redis,
  stream: string,
  group: string,
  activeConsumerMs: number,
): Promise<ConsumerInfo[]> {
  const rows = (await redis.xinfo('CONSUMERS', stream, group).catch((err) => noGroup(err, stream, group))) as unknown[][];
  const consumers = rows.map((row) => {
    const info = pairsToObject(row);
    const idleMs = Number(info.idle);
    const inactiveMs = info.inactive === undefined || info.inactive === null ? null : Number(info.inactive);
    // Redis 7.2+ says -1 for a consumer that never read successfully.
    const seen = inactiveMs === null || inactiveMs < 0 ? idleMs : Math.min(idleMs, inactiveMs);
    return {
      name: String(info.name),
      pending: Number(info.pending),
      idleMs,
      inactiveMs,
      active: seen < activeConsumerMs,
      holds: [] as string[],
    };
  });
  const holders = consumers.filter((c) => c.pending > 0);
  if (holders.length > 0) {
    const pipeline = redis.pipeline();
    for (const c of holders) pipeline.xpending(stream, group, '-', '+', HELD_SAMPLE, c.name);
    const replies = (await pipeline.exec()) ?? [];
    holders.forEach((c, i) => {
      const [err, held] = replies[i] ?? [new Error('no reply'), null];
      if (!err) c.holds = (held as XPendingRow[]).map(([id]) => id);
    });
  }
  return consumers;
}

/**
 * Deletes a consumer that holds nothing (checked and deleted in one script: XGROUP DELCONSUMER
 * would drop its PEL, the only record of entries it read). Refused while it holds entries.
 */
export async function deleteConsumer(
  redis: ScriptedRedis,
  stream: string,
  group: string,
  consumer: string,
): Promise<{ deleted: string }> {
  const known = await listConsumers(redis, stream, group, 0);
  const found = known.find((c) => c.name === consumer);
  if (!found) throw new OperationError('not-found', OPERATIONS_MESSAGES.noConsumer(stream, group, consumer));
  const deleted = await redis.nrsDeleteConsumerIfIdle(stream, group, consumer);
  if (deleted !== 1) {
    const [row] = (await listConsumers(redis, stream, group, 0)).filter((c) => c.name === consumer);
    throw new OperationError(
      'refused',
      OPERATIONS_MESSAGES.consumerHolds(stream, group, consumer, row?.pending ?? found.pending),
    );
  }
  return { deleted: consumer };
}

/**
 * Moves every entry `from` holds to `to` (XCLAIM ... JUSTID in batches; delivery counts unchanged),
 * so that `from` can be deleted without losing the record of them.
 */
export async function handOver(
  redis: Redis,
  stream: string,
  group: string,
  from: string,
  to: string,
): Promise<{ moved: number }> {
  if (from === to) throw new OperationError('bad-request', OPERATIONS_MESSAGES.sameConsumer(from));
  let moved = 0;
  for (;;) {
    const rows = (await redis
      .xpending(stream, group, '-', '+', HAND_OVER_BATCH, from)
      .catch((err) => noGroup(err, stream, group))) as XPendingRow[];
    if (rows.length === 0) return { moved };
    const claimed = await redis.xclaim(stream, group, to, 0, ...rows.map(([id]) => id), 'JUSTID');
    moved += claimed.length;
    // Nothing moved: the ids left the PEL meanwhile (acked or deleted); stop rather than spin.
    if (claimed.length === 0) return { moved };
  }
}
