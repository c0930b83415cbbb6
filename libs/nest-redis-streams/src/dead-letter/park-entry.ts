import { FENCED, type Fenced, type WriteTarget, fenceArgs } from '../ownership/fenced-writes.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { parkAndBlock } from './blocked-key-scripts.js';

/** One park: which entry, where to, and what the dead letter records. */
export interface ParkWrite {
  readonly id: string;
  readonly deadLetterStream: string;
  /**
   * '1': only while `consumer` owns the entry (a consumer parking its own). '0': whoever owns it
   * (an operator's park, or an entry Redis already dropped from the PEL: a tombstone).
   */
  readonly requireOwner: '1' | '0';
  /** The dead-letter metadata (see recovery/dead-letter-record.ts): field names and values. */
  readonly metadata: readonly string[];
  /** The fields held in memory, escaped: only written when the payload was trimmed meanwhile. */
  readonly fallbackFields?: readonly string[];
  /**
   * `onDeadLetter: 'block-key'` (or an operator's park, which cannot tell): the entry's ordering
   * key, whose block becomes `parked` in the same script; null when the key is not known: the
   * script finds the block this entry holds, if any. Any string is a key, '' too.
   */
  readonly blockKey?: string | null;
}

/**
 * The one park write: XADD to the dead-letter stream and XACK of the original in one script, so
 * an entry is never in both places or in neither. The script copies the payload from the stream
 * itself, byte for byte; `fallbackFields` only stand in for an entry trimmed away meanwhile.
 * Fenced when the target has a fence (exclusive ownership). Resolves with the dead letter's id,
 * null when the entry is not pending (under `consumer`, with requireOwner '1'), FENCED when Redis
 * refused the partition's generation. The consumer's failure path and the operations layer both
 * park through it.
 */
export async function parkEntry(redis: ScriptedRedis, target: WriteTarget, park: ParkWrite): Promise<string | null | Fenced> {
  const { stream, group, consumer, fence } = target;
  const { id, deadLetterStream: dlq, requireOwner, metadata, fallbackFields = [] } = park;
  const rest = [String(metadata.length), ...metadata, ...fallbackFields];
  if (park.blockKey !== undefined) {
    const args = [group, consumer, id, requireOwner, ...rest];
    return parkAndBlock(redis, target, dlq, park.blockKey, args);
  }
  if (!fence) return redis.nrsDeadLetterIfOwned(stream, dlq, group, consumer, id, requireOwner, ...rest);
  const fenced = fenceArgs(fence);
  if (fenced === null) return null;
  const reply = await redis.nrsDeadLetterIfOwnedFenced(stream, dlq, ...fenced, group, consumer, id, requireOwner, ...rest);
  return reply === 0 ? FENCED : reply;
}
