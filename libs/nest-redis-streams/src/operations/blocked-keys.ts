import type { Redis } from 'ioredis';
import { blockedKeysKey, heldEntriesKey, partitionStreams } from '../keys/index.js';
import { pairsToObject } from '../redis/replies.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_DEFAULTS } from './operations.constants.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import type { StreamSetting } from './overview.js';
import { parseCount, requireName } from './stream-position.js';

/**
 * Where a blocked key stands: its blocking entry is being retried (`failing`), is in the
 * dead-letter stream (`parked`), or was re-driven and succeeded or was discarded and the held
 * entries go back one at a time (`releasing`). `unreadable`: the record is not the JSON the
 * transport writes (written by hand, or by a newer version); the key still counts as blocked.
 */
export type BlockedKeyState = 'failing' | 'parked' | 'releasing' | 'unreadable';

/**
 * An ordering key held back in a group by `onDeadLetter: 'block-key'`: the entry it waits for and
 * how many later entries of the key wait behind it.
 */
export interface BlockedKey {
  /** The stream key (a partition stream key for a partitioned stream). */
  stream: string;
  group: string;
  /** The ordering key. */
  key: string;
  state: BlockedKeyState;
  /** Id of the entry (in `stream`) whose failure blocked the key. */
  blockingEntry: string;
  /** While `releasing`: id of the held entry now running again (in `stream`). */
  current?: string;
  /** While `parked`: the blocking entry's dead-letter record id. */
  deadLetter?: string;
  /** While `parked`: the dead-letter stream holding that record. */
  deadLetterStream?: string;
  /** When the key was blocked (ms since the epoch; 0 when the record does not say). */
  since: number;
  /** Later entries of the key held back (XLEN of its held stream), in arrival order. */
  waiting: number;
}

/** The figures of one group's blocked keys, for the gauges. */
export interface BlockedKeyTotals {
  keys: number;
  waiting: number;
  /** Oldest `since` among the keys; null when none is blocked (or none says when). */
  oldestSince: number | null;
}

/** Which blocked keys to list. */
export interface BlockedKeysQuery {
  /** Only this group's keys; without it, every group of each stream key. */
  group?: string;
  /** Read every partition stream of the logical stream (digits as text are taken too). @default 1 */
  partitions?: number | string;
}

const STATES = new Set<string>(['failing', 'parked', 'releasing']);

/**
 * The blocked keys of `stream` (or of each of its partition streams), each stream key checked by
 * `served` first, so a stream the console or the CLI does not serve is refused as not found.
 * Stream keys are read side by side (on a cluster, each on its own node), listed in partition
 * order; a missing stream key, or a group that none of them has, is refused as not found.
 */
export async function listBlockedKeys(
  redis: Redis,
  served: (stream: string) => Promise<StreamSetting>,
  stream: string,
  query: BlockedKeysQuery = {},
): Promise<BlockedKey[]> {
  const group = query.group === undefined ? undefined : requireName(query.group, 'group');
  const partitions = parseCount(query.partitions, 1, OPERATIONS_DEFAULTS.maxPartitions, 'partitions');
  const keys = partitionStreams(stream, partitions);
  await Promise.all(keys.map((key) => served(key)));
  const perKey = await Promise.all(keys.map((key) => readStreamKey(redis, key, group)));
  // A typo in a group name must not read as "nothing blocked".
  if (group !== undefined && !perKey.some((k) => k.hasGroup))
    throw new OperationError('not-found', OPERATIONS_MESSAGES.noGroup(stream, group));
  return perKey.flatMap((k) => k.blocked);
}

/** The blocked keys of one stream key, in `group` or in each of its groups. */
async function readStreamKey(redis: Redis, key: string, group: string | undefined) {
  const groups = await groupsOf(redis, key);
  if (groups === null) throw new OperationError('not-found', OPERATIONS_MESSAGES.notAStream(key, 'none'));
  const names = group === undefined ? groups : groups.filter((g) => g === group);
  const blocked = await Promise.all(names.map((name) => readBlockedKeys(redis, key, name)));
  return { hasGroup: names.length > 0, blocked: blocked.flat() };
}

/**
 * The blocked keys of `group` on one stream key, oldest block first: HGETALL of the group's
 * blocked-keys hash, then one pipeline of XLENs of the held streams (all in the stream's slot, so
 * one node answers both on a cluster). Two round trips whatever the number of keys.
 */
export async function readBlockedKeys(redis: Redis, stream: string, group: string): Promise<BlockedKey[]> {
  const records = await redis.hgetall(blockedKeysKey(stream, group));
  const keys = Object.keys(records);
  if (keys.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const key of keys) pipeline.xlen(heldEntriesKey(stream, group, key));
  const lengths = (await pipeline.exec()) ?? [];
  const blocked = keys.map((key, i) => {
    const [err, length] = lengths[i] ?? [null, 0];
    if (err) throw err;
    return parseRecord(stream, group, key, records[key], Number(length));
  });
  return blocked.sort((a, b) => a.since - b.since || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** Keys blocked, entries held and the oldest block of a group, from `readBlockedKeys`. */
export function totalBlocked(blocked: readonly BlockedKey[]): BlockedKeyTotals {
  const sinces = blocked.map((b) => b.since).filter((since) => since > 0);
  return {
    keys: blocked.length,
    waiting: blocked.reduce((sum, b) => sum + b.waiting, 0),
    oldestSince: sinces.length > 0 ? Math.min(...sinces) : null,
  };
}

/** The group names of a stream key; null when the key does not exist. */
async function groupsOf(redis: Redis, stream: string): Promise<string[] | null> {
  const rows = (await redis.xinfo('GROUPS', stream).catch((err: unknown) => {
    if (/no such key/i.test(String(err))) return null;
    throw err;
  })) as unknown[][] | null;
  return rows && rows.map((row) => String(pairsToObject(row)['name']));
}

function parseRecord(stream: string, group: string, key: string, text: string, waiting: number): BlockedKey {
  const record = parseJson(text);
  if (!record || !STATES.has(String(record.state))) {
    return { stream, group, key, state: 'unreadable', blockingEntry: stringOf(record?.entry), since: 0, waiting };
  }
  const blocked: BlockedKey = {
    stream,
    group,
    key,
    state: record.state as BlockedKeyState,
    blockingEntry: stringOf(record.entry),
    since: Number.isFinite(Number(record.since)) ? Number(record.since) : 0,
    waiting,
  };
  // Empty strings in the record mean "none": left out rather than shown as blank ids.
  if (stringOf(record.current)) blocked.current = stringOf(record.current);
  if (stringOf(record.deadLetter)) blocked.deadLetter = stringOf(record.deadLetter);
  if (stringOf(record.deadLetterStream)) blocked.deadLetterStream = stringOf(record.deadLetterStream);
  return blocked;
}

function parseJson(text: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(text) as unknown;
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}
