import type { Redis } from 'ioredis';
import { isNoGroupError } from '../redis/errors/reply-errors.js';
import { pairsToObject } from '../redis/replies.js';
import { claimEpochKey, compareStreamIds } from '../keys/index.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { type ConsumerInfo, listConsumers } from './consumers.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import { idBeforeTime, idTime, MAX_SEQ, parseStreamId, parseTime } from './stream-position.js';

/** Where to move a group's cursor: an id, a time (every entry from then on is delivered), or the end. */
export type CursorTarget = { id: string } | { time: string | number } | { end: true };

/** What `XGROUP SETID` would do, computed without doing it. */
export interface CursorPreview {
  stream: string;
  group: string;
  /** The group's last-delivered-id now. */
  from: string;
  /** The id it would be set to. */
  to: string;
  /** `redeliver`: entries after `to` up to `from` are delivered again; `skip`: entries up to `to` are never delivered. */
  effect: 'redeliver' | 'skip' | 'none';
  /** How many entries are re-delivered or skipped (at most `limit`; see `capped`). */
  entries: number;
  /** True when there are more than `entries`. */
  capped: boolean;
  /** Pending entries stay pending whatever the cursor: they are not part of `entries`. */
  pending: number;
  /** Consumers seen within the active window: the move is refused while there are any, unless forced. */
  activeConsumers: string[];
  /** The stream's last id (last-generated-id): new entries get ids after it. */
  lastId: string;
  /**
   * `to` is after the stream's last id: besides the `entries` skipped now, every entry added
   * before `skipsAddedUntil` would be skipped as it arrives. The move is refused unless forced.
   */
  pastEnd: boolean;
  /** With `pastEnd`, the time (ms since the epoch) before which new entries are never delivered; else null. */
  skipsAddedUntil: number | null;
}

// Counts entries in (low, high] inside Redis up to a cap, so a dry run moves no payloads.
// KEYS[1] stream; ARGV low (exclusive), high (inclusive), cap → count (cap + 1 means "more").
const COUNT_BETWEEN = `
return #redis.call('XRANGE', KEYS[1], '(' .. ARGV[1], ARGV[2], 'COUNT', tonumber(ARGV[3]) + 1)`;

function resolveTarget(lastId: string, target: CursorTarget): string {
  if ('end' in target) return lastId;
  if ('time' in target) return idBeforeTime(parseTime(target.time));
  return parseStreamId(target.id, 'The new cursor');
}

async function lastGeneratedId(redis: Redis, stream: string): Promise<string> {
  return String(pairsToObject((await redis.xinfo('STREAM', stream)) as unknown[])['last-generated-id']);
}

/** The first time whose entries a cursor at `id` delivers: entries added before it are skipped. */
function deliversFrom(id: string): number {
  return id.endsWith(`-${MAX_SEQ}`) ? idTime(id) + 1 : idTime(id);
}

async function groupInfo(redis: Redis, stream: string, group: string): Promise<Record<string, unknown>> {
  const rows = (await redis.xinfo('GROUPS', stream).catch((err) => {
    if (isNoGroupError(err) || /no such key/i.test(String(err)))
      throw new OperationError('not-found', OPERATIONS_MESSAGES.noGroup(stream, group));
    throw err;
  })) as unknown[][];
  const info = rows.map(pairsToObject).find((g) => g.name === group);
  if (!info) throw new OperationError('not-found', OPERATIONS_MESSAGES.noGroup(stream, group));
  return info;
}

/** The dry run of `setGroupCursor`: what would be re-delivered or skipped, and who is active. */
export async function previewGroupCursor(
  redis: Redis,
  stream: string,
  group: string,
  target: CursorTarget,
  options: { limit: number; activeConsumerMs: number },
): Promise<CursorPreview> {
  const info = await groupInfo(redis, stream, group);
  const lastId = await lastGeneratedId(redis, stream);
  const to = resolveTarget(lastId, target);
  const from = String(info['last-delivered-id']);
  // Redis takes a cursor past the last id without a word; XADD * then writes entries at or
  // below it, which the group never reads (a --time in the future skips everything until then).
  const pastEnd = compareStreamIds(to, lastId) > 0;
  const order = compareStreamIds(to, from);
  const effect = order === 0 ? 'none' : order < 0 ? 'redeliver' : 'skip';
  const [low, high] = order < 0 ? [to, from] : [from, to];
  const counted = effect === 'none' ? 0 : Number(await redis.eval(COUNT_BETWEEN, 1, stream, low, high, options.limit));
  const consumers: ConsumerInfo[] = await listConsumers(redis, stream, group, options.activeConsumerMs);
  return {
    stream,
    group,
    from,
    to,
    effect,
    entries: Math.min(counted, options.limit),
    capped: counted > options.limit,
    pending: Number(info.pending),
    activeConsumers: consumers.filter((c) => c.active).map((c) => c.name),
    lastId,
    pastEnd,
    skipsAddedUntil: pastEnd ? deliversFrom(to) : null,
  };
}

/**
 * `XGROUP SETID` after the same checks as the preview: refused while the group has active
 * consumers (their next read would race the move), or when the cursor would be past the stream's
 * last id (entries added until then would be skipped), unless `force`. Resolves with the preview
 * it acted on. Redis drops the group's entries-read, so its lag reads as unknown until the group
 * has caught up (the transport's reclaim round repairs it then). The move raises the group's claim
 * epoch in the same script: a move back re-delivers pending entries to whoever reads next.
 */
export async function setGroupCursor(
  redis: ScriptedRedis,
  stream: string,
  group: string,
  target: CursorTarget,
  options: { limit: number; activeConsumerMs: number; force: boolean },
): Promise<CursorPreview> {
  const preview = await previewGroupCursor(redis, stream, group, target, options);
  if (preview.pastEnd && !options.force) {
    throw new OperationError(
      'refused',
      OPERATIONS_MESSAGES.cursorPastEnd(stream, group, preview.to, preview.lastId, preview.skipsAddedUntil ?? 0),
    );
  }
  if (preview.activeConsumers.length > 0 && !options.force) {
    throw new OperationError('refused', OPERATIONS_MESSAGES.activeConsumers(stream, group, preview.activeConsumers));
  }
  await redis.nrsSetIdCounted(stream, claimEpochKey(stream, group), group, preview.to);
  return preview;
}
