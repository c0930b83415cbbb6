import type { Redis } from 'ioredis';
import { claimEpochKey, consumerBeatsKey, groupMembersKey, partitionOfKey } from '../keys/index.js';
import { isNoGroupError } from '../redis/errors/reply-errors.js';
import { type XPendingRow, pairsToObject } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { DeadLetterReason } from '../dead-letter-reason.js';
import { parkAsHeld } from './entry-actions.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import { redisNow } from './ownership.js';
import { readBeats } from '../recovery/consumer-beats.js';

/**
 * What a consumer's liveness was judged by. `heartbeat`: the library's own (every instance beats
 * on its reclaim round, see recovery/consumer-beats.ts; under `ownership: 'exclusive'` it also
 * renews its membership lease in the group), even on a quiet stream.
 * `server`: Redis 7.2+, whose `idle` counts every read attempt, blocked ones included. `idle`:
 * older Redis, whose `idle` counts only reads that returned entries, so a healthy consumer of a
 * quiet stream looks idle: `active` false means "no entries read lately", not "gone".
 */
export type LivenessSource = 'heartbeat' | 'server' | 'idle';

/** A consumer of a group as XINFO CONSUMERS reports it, with the first ids it holds. */
export interface ConsumerInfo {
  name: string;
  pending: number;
  /** Since its last attempted interaction (read or claim). */
  idleMs: number;
  /** Since its last successful read (Redis 7.2+); null on older servers. */
  inactiveMs: number | null;
  /** Whether it counts as running: a live heartbeat, else seen within `activeConsumerMs`. */
  active: boolean;
  /** What `active` was judged by. */
  liveness: LivenessSource;
  /** Under a heartbeat: how long its beat or membership lease still runs (ms, Redis' clock); else null. */
  heartbeatLeftMs: number | null;
  /** The oldest ids in its PEL (up to `sample`). */
  holds: string[];
}

/**
 * Live heartbeats of the group's consumers by name: their beats on `stream` (every instance's
 * reclaim round) and the membership leases of the group's members (`<consumer>#<instance>`, under
 * exclusive ownership), the longest left of each. Empty when the caller may not read them (an ACL
 * without ZRANGE or TIME): liveness then falls back to the server.
 */
async function readHeartbeats(redis: Redis, stream: string, group: string): Promise<Map<string, number>> {
  const base = partitionOfKey(stream)?.stream ?? stream;
  const read = async () => {
    const at = await redisNow(redis);
    const [members, beating] = await Promise.all([
      redis.zrange(groupMembersKey(base, group), '0', '-1', 'WITHSCORES'),
      readBeats(redis, stream, group, at),
    ]);
    return [at, members, beating] as const;
  };
  const [now, rows, beats] = await read().catch(() => [0, [] as string[], new Map<string, number>()] as const);
  const left = new Map<string, number>(beats);
  for (let i = 0; i + 1 < rows.length; i += 2) {
    const ms = Number(rows[i + 1]) - now;
    const hash = rows[i].lastIndexOf('#');
    const consumer = hash > 0 ? rows[i].slice(0, hash) : rows[i];
    if (ms > 0 && ms > (left.get(consumer) ?? 0)) left.set(consumer, ms);
  }
  return left;
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
  const [rows, heartbeats] = await Promise.all([
    redis.xinfo('CONSUMERS', stream, group).catch((err) => noGroup(err, stream, group)) as Promise<unknown[][]>,
    readHeartbeats(redis, stream, group),
  ]);
  const consumers = rows.map((row): ConsumerInfo => {
    const info = pairsToObject(row);
    const name = String(info.name);
    const idleMs = Number(info.idle);
    const inactiveMs = info.inactive === undefined || info.inactive === null ? null : Number(info.inactive);
    // Redis 7.2+ says -1 for a consumer that never read successfully.
    const seen = inactiveMs === null || inactiveMs < 0 ? idleMs : Math.min(idleMs, inactiveMs);
    const heartbeatLeftMs = heartbeats.get(name) ?? null;
    return {
      name,
      pending: Number(info.pending),
      idleMs,
      inactiveMs,
      active: heartbeatLeftMs !== null || seen < activeConsumerMs,
      liveness: heartbeatLeftMs !== null ? 'heartbeat' : inactiveMs !== null ? 'server' : 'idle',
      heartbeatLeftMs,
      holds: [],
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
 * Deletes a consumer that holds nothing and is not alive (checked and deleted in one script: XGROUP
 * DELCONSUMER would drop its PEL, the only record of entries it read). Refused while it holds
 * entries or has a live heartbeat (its beat, checked in the script too, or its membership lease).
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
  const alive = (leftMs: number) =>
    new OperationError('refused', OPERATIONS_MESSAGES.consumerAlive(stream, group, consumer, leftMs));
  if (found.heartbeatLeftMs !== null) throw alive(found.heartbeatLeftMs);
  const deleted = await redis.nrsDeleteConsumerIfIdle(stream, consumerBeatsKey(stream, group), group, consumer);
  if (deleted === 2) throw alive((await readHeartbeats(redis, stream, group)).get(consumer) ?? 0);
  if (deleted !== 1) {
    const [row] = (await listConsumers(redis, stream, group, 0)).filter((c) => c.name === consumer);
    throw new OperationError(
      'refused',
      OPERATIONS_MESSAGES.consumerHolds(stream, group, consumer, row?.pending ?? found.pending),
    );
  }
  return { deleted: consumer };
}

/** A hand-over names two consumers: one to itself would move nothing and then delete what it holds. */
export function checkHandOver(from: string, to: string): void {
  if (from === to) throw new OperationError('bad-request', OPERATIONS_MESSAGES.sameConsumer(from));
}

/**
 * Moves every entry `from` holds to `to` (XCLAIM ... JUSTID in batches; delivery counts unchanged),
 * so that `from` can be deleted without losing the record of them. Each batch raises the group's
 * claim epoch in the same script, so a `from` still running acks its entries checked. An entry
 * whose payload was trimmed away is not moved (XCLAIM would drop it from the PEL without a trace):
 * it becomes a `payload-trimmed` tombstone in the dead-letter stream, as the consumer's own
 * reclaim makes it (`tombstoned`: the entry ids).
 */
export async function handOver(
  redis: ScriptedRedis,
  where: { stream: string; group: string; deadLetterStream: string },
  from: string,
  to: string,
): Promise<{ moved: number; tombstoned: string[] }> {
  const { stream, group } = where;
  checkHandOver(from, to);
  let moved = 0;
  const tombstoned: string[] = [];
  for (;;) {
    const rows = (await redis
      .xpending(stream, group, '-', '+', HAND_OVER_BATCH, from)
      .catch((err) => noGroup(err, stream, group))) as XPendingRow[];
    if (rows.length === 0) return { moved, tombstoned };
    const ids = rows.map(([id]) => id);
    // Only what `from` still holds: an id another consumer reclaimed since the read (and runs) stays its own.
    const [claimed, gone] = await redis.nrsClaimFromCounted(stream, claimEpochKey(stream, group), group, from, to, ...ids);
    moved += claimed.length;
    const trimmed = rows.filter(([id]) => gone.includes(id));
    const error = new Error(OPERATIONS_MESSAGES.trimmedAtHandOver(from, to));
    for (const row of trimmed) {
      const reason = DeadLetterReason.PAYLOAD_TRIMMED;
      if ((await parkAsHeld(redis, where, row, { reason, error })) !== null) tombstoned.push(row[0]);
    }
    // Nothing moved: the ids left `from` meanwhile (acked, deleted or reclaimed); stop rather than spin.
    if (claimed.length === 0 && trimmed.length === 0) return { moved, tombstoned };
  }
}
