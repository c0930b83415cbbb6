import type { Cluster, Redis } from 'ioredis';
import { ENVELOPE } from '../constants.js';
import { discardDeadLetter } from './discard-dead-letter.js';
import { REDRIVE_DEAD_LETTER } from './redrive-dead-letter.js';
import { blockedKeysKey, defaultDeadLetterStream, startAfter } from '../keys/index.js';
import { DeadLetterReason, splitDeadLetterBuffers, splitDeadLetterFields } from './dead-letter-record.js';

/** One parked entry as an operator sees it. */
export interface DeadLetter {
  /** Id in the dead-letter stream. */
  id: string;
  reason: DeadLetterReason;
  /** Stream and entry id it came from. */
  stream: string;
  originalId: string;
  /** The group that parked it (and the one a re-drive goes to). */
  group: string;
  consumer: string;
  error: string;
  errorClass: string;
  deliveries: number;
  /** When it was parked (ms since epoch). */
  parkedAt: number;
  /**
   * The original fields, decoded as UTF-8 for display: bytes that are not UTF-8 show as U+FFFD.
   * `inspectBytes` gives them exactly; a re-drive always copies the stored bytes.
   */
  fields: Record<string, string>;
}

/** A dead letter with its original fields as raw bytes, in their order (duplicates kept). */
export interface DeadLetterBytes extends Omit<DeadLetter, 'fields'> {
  fields: Array<[name: Buffer, value: Buffer]>;
}

/** A page of dead letters; pass `next` as `after` to read on, null at the end. */
export interface DeadLetterPage {
  items: DeadLetter[];
  next: string | null;
}

/** What a dead-letter stream holds, counted by reason and group (see `DeadLetterService.tally`). */
export interface DeadLetterTally {
  /** Records in the stream (XLEN). */
  total: number;
  /** Records read to count; less than `total` when the limit stopped the count. */
  counted: number;
  byReason: Record<string, number>;
  byGroup: Record<string, number>;
  /**
   * Source entries lost to trimming, from the tombstones: one per `payload-trimmed`, `dlq:lost_count`
   * per `trimmed-undelivered`.
   */
  lost: number;
}

/** Options of `DeadLetterService.redrive`. */
export interface RedriveOptions {
  /**
   * The group that runs the re-driven entry; the stream's other groups acknowledge it without
   * running it. `null` re-drives to every group (they all run it again).
   * @default the group that parked it
   */
  group?: string | null;
}

/**
 * The operator's path for parked entries: list and inspect with paging, re-drive to the source
 * stream with a fresh delivery budget, discard. Every call is safe to retry. Pass a plain ioredis
 * connection (or Cluster); in a cluster a dead-letter stream must share its source's hash slot
 * (the default naming does).
 *
 * @example
 * ```ts
 * const letters = new DeadLetterService(new Redis(process.env.REDIS_URL));
 * const { items } = await letters.list('orders:dlq');
 * for (const letter of items) if (letter.reason === DeadLetterReason.MAX_DELIVERIES) await letters.redrive('orders:dlq', letter.id);
 * ```
 * @publicApi
 */
export class DeadLetterService {
  constructor(private readonly redis: Redis | Cluster) {}

  /** Dead-letter stream name for a source stream (the transport's default naming). */
  static streamFor(stream: string, cluster = false): string {
    return defaultDeadLetterStream(stream, cluster);
  }

  /**
   * A page of dead letters, oldest first; `after` is the `next` of the previous page.
   * @param options.count page size (default 50)
   * @param options.upTo the last id to read (inclusive): a read that re-drives what it reads stops
   * at what existed when it began, instead of reading the records its own re-drives park again.
   */
  async list(deadLetterStream: string, options: { after?: string; count?: number; upTo?: string } = {}): Promise<DeadLetterPage> {
    const count = options.count ?? 50;
    const start = options.after ? startAfter(options.after) : '-';
    if (start === null) return { items: [], next: null };
    const end = options.upTo ?? '+';
    const entries = await this.redis.xrange(deadLetterStream, start, end, 'COUNT', count);
    const items = entries.map(([id, fields]) => toDeadLetter(id, fields));
    const last = items.at(-1)?.id;
    return { items, next: items.length === count && last !== options.upTo ? last! : null };
  }

  /** The id of the newest dead letter, or null when the stream is empty or missing: a bound for `list`'s `upTo`. */
  async lastId(deadLetterStream: string): Promise<string | null> {
    const [newest] = await this.redis.xrevrange(deadLetterStream, '+', '-', 'COUNT', 1);
    return newest ? newest[0] : null;
  }

  /** One dead letter by its id in the dead-letter stream; null when it is not there. */
  async inspect(deadLetterStream: string, id: string): Promise<DeadLetter | null> {
    const [entry] = await this.redis.xrange(deadLetterStream, id, id);
    return entry ? toDeadLetter(entry[0], entry[1]) : null;
  }

  /** Like `inspect`, with the original field names and values as the exact bytes stored. */
  async inspectBytes(deadLetterStream: string, id: string): Promise<DeadLetterBytes | null> {
    const [entry] = await this.redis.xrangeBuffer(deadLetterStream, id, id);
    if (!entry) return null;
    const { meta, original } = splitDeadLetterBuffers(entry[1]);
    return { ...describe(entry[0].toString(), meta), fields: original };
  }

  /** How many dead letters the stream holds (all groups together). */
  async count(deadLetterStream: string): Promise<number> {
    return this.redis.xlen(deadLetterStream);
  }

  /**
   * Re-adds the entry's original fields, byte for byte, to the stream it came from (a new entry
   * id, so it gets a fresh delivery count) and removes it from the dead-letter stream, in one
   * script. The new entry names the group that parked it (field `nrs:group`): only that group
   * runs it; the stream's other groups, which already handled it, acknowledge it unhandled. It
   * also carries its lineage: `nrs:redriven_from` (this dead letter's id) and `nrs:original_id`
   * (the id it had when first parked).
   * Resolves with the new entry id, or null when it was already re-driven or discarded.
   * @throws Error for a tombstone (no payload to re-drive): discard it instead; for a dead letter
   * that blocks its ordering key (`nrs:blocked_key`, `onDeadLetter: 'block-key'`) re-driven to
   * another group than the one that parked it: that group's key would stay blocked.
   */
  // Why a target-group field and not a retry stream per group: a retry stream would need a second
  // read loop (and blocking connection) per subscription, its own group, trimming, dead-letter
  // stream, lag and health reporting, and a hash slot shared with its source in a cluster. The
  // field keeps the entry in its source stream (its partition, retention and backlog figures) at
  // the cost of one read and ack per other group, counted as `skipped` (other-group). Consumers of
  // a library version without this check would run it: upgrade every group before re-driving.
  async redrive(deadLetterStream: string, id: string, options: RedriveOptions = {}): Promise<string | null> {
    const letter = await this.inspect(deadLetterStream, id);
    if (!letter) return null;
    if (!letter.stream) {
      throw new Error(
        `Dead letter ${id} in "${deadLetterStream}" names no source stream (field "dlq:stream"); re-add its fields by hand.`,
      );
    }
    const group = options.group === undefined ? (letter.group ?? '') : (options.group ?? '');
    if (group !== '' && group !== letter.group) await this.refuseIfBlocking(letter, deadLetterStream, group);
    const result = await this.redis.eval(
      REDRIVE_DEAD_LETTER,
      2,
      deadLetterStream,
      letter.stream,
      id,
      group,
      ENVELOPE.targetGroup,
      ENVELOPE.redrivenFrom,
      ENVELOPE.originalId,
    );
    if (result === 0) {
      throw new Error(
        `Dead letter ${id} in "${deadLetterStream}" is a tombstone (${letter.reason}): it has no payload to re-drive. Discard it.`,
      );
    }
    return (result as string | null) ?? null;
  }

  /**
   * A re-drive to another group of the dead letter its key's block waits for (`onDeadLetter:
   * 'block-key'`) is refused: only the group that parked it recognises the copy as the blocker,
   * so the key would stay blocked behind a dead letter the re-drive deleted.
   */
  private async refuseIfBlocking(letter: DeadLetter, deadLetterStream: string, group: string): Promise<void> {
    const key = letter.fields[ENVELOPE.blockedKey];
    if (key === undefined || !letter.stream) return;
    const raw = await this.redis.hget(blockedKeysKey(letter.stream, letter.group), key);
    if (raw === null || !parksOn(raw, letter.id)) return;
    throw new Error(
      `Dead letter ${letter.id} in "${deadLetterStream}" blocks ordering key "${key}" of group "${letter.group}" ` +
        `(onDeadLetter: 'block-key'): re-driven to group "${group}" it would leave that key blocked. Re-drive it ` +
        `to "${letter.group}" (leave the group out), or release the key first (releaseBlockedKey).`,
    );
  }

  /**
   * Counts the records by reason and group, and the entries lost to trimming that the tombstones
   * report. Reads at most `limit` records (oldest first), in pages; `signal` stops it between pages
   * (rejecting with its reason).
   */
  async tally(deadLetterStream: string, options: { limit?: number; signal?: AbortSignal } = {}): Promise<DeadLetterTally> {
    const limit = options.limit ?? 10_000;
    // Null-prototype maps: a group named "__proto__" is data, not the object's prototype.
    const [byReason, byGroup] = [Object.create(null) as Record<string, number>, Object.create(null) as Record<string, number>];
    const tally: DeadLetterTally = { total: await this.count(deadLetterStream), counted: 0, byReason, byGroup, lost: 0 };
    let start = '-';
    while (tally.counted < limit) {
      options.signal?.throwIfAborted();
      const entries = await this.redis.xrange(deadLetterStream, start, '+', 'COUNT', Math.min(500, limit - tally.counted));
      for (const [, fields] of entries) {
        const { meta } = splitDeadLetterFields(fields);
        const reason = meta.reason ?? '';
        byReason[reason] = (byReason[reason] ?? 0) + 1;
        byGroup[meta.group ?? ''] = (byGroup[meta.group ?? ''] ?? 0) + 1;
        if (reason === DeadLetterReason.PAYLOAD_TRIMMED) tally.lost += 1;
        if (reason === DeadLetterReason.TRIMMED_UNDELIVERED) tally.lost += Number(meta.lost_count ?? 1);
      }
      tally.counted += entries.length;
      const next = entries.length === 0 ? null : startAfter(entries[entries.length - 1][0]);
      if (next === null) break;
      start = next;
    }
    return tally;
  }

  /**
   * Deletes a dead letter for good. Resolves false when it was not there (already discarded). One
   * that blocks its ordering key (`onDeadLetter: 'block-key'`) releases the key in the same script.
   */
  async discard(deadLetterStream: string, id: string): Promise<boolean> {
    return (await discardDeadLetter(this.redis, deadLetterStream, id)).deleted;
  }
}

function toDeadLetter(id: string, fields: string[]): DeadLetter {
  const { meta, original } = splitDeadLetterFields(fields);
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < original.length; i += 2) {
    Object.defineProperty(record, original[i], { value: original[i + 1], enumerable: true, writable: true, configurable: true });
  }
  return { ...describe(id, meta), fields: record };
}

function describe(id: string, meta: Record<string, string>): Omit<DeadLetter, 'fields'> {
  return {
    id,
    reason: meta.reason as DeadLetterReason,
    stream: meta.stream,
    originalId: meta.id,
    group: meta.group,
    consumer: meta.consumer,
    error: meta.error ?? '',
    errorClass: meta.error_class ?? '',
    deliveries: Number(meta.deliveries ?? 0),
    parkedAt: Number(meta.time ?? 0),
  };
}

/** The stored block (see keys/blocked-key-keys.ts) is parked on dead letter `id`. */
function parksOn(raw: string, id: string): boolean {
  try {
    const block = JSON.parse(raw) as { state?: unknown; deadLetter?: unknown };
    return block.state === 'parked' && block.deadLetter === id;
  } catch {
    return false;
  }
}
