import type { Redis } from 'ioredis';
import { DLQ_FIELDS } from '../dead-letter/dead-letter-record.js';
import type { XPendingRow } from '../redis/replies.js';

/** Where an entry an operator acts on lives: its stream, group and the stream's dead-letter stream. */
export interface EntryPlace {
  stream: string;
  group: string;
  deadLetterStream: string;
}

// A park that raced the operator's action has just happened: its dead letter is among the newest.
// Older ones are not searched (a whole dead-letter stream can be millions of records).
const RECENT_DEAD_LETTERS = 100;

/** The newest dead letter of entry `id` of `group`, among the most recent ones; null if none. */
async function recentDeadLetterOf(redis: Redis, place: EntryPlace, id: string): Promise<string | null> {
  const letters = await redis.xrevrange(place.deadLetterStream, '+', '-', 'COUNT', RECENT_DEAD_LETTERS);
  for (const [letterId, fields] of letters) {
    const meta = new Map<string, string>();
    for (let i = 0; i + 1 < fields.length; i += 2) meta.set(fields[i], fields[i + 1]);
    if (meta.get(DLQ_FIELDS.id) === id && meta.get(DLQ_FIELDS.group) === place.group) return letterId;
  }
  return null;
}

/**
 * What became of an entry that left its group's pending list (or its owner) while an operator's
 * write was under way, as the end of a sentence: still held (by whom), parked (as which dead
 * letter), acknowledged, or deleted from the stream. Read after the refused write, for its message.
 */
export async function fateOf(redis: Redis, place: EntryPlace, id: string): Promise<string> {
  const [row] = (await redis.xpending(place.stream, place.group, id, id, 1)) as XPendingRow[];
  if (row) return `it is pending with consumer "${row[1]}" now`;
  const letter = await recentDeadLetterOf(redis, place, id);
  if (letter) return `it was parked meanwhile, as dead letter ${letter} of "${place.deadLetterStream}"`;
  const [entry] = await redis.xrange(place.stream, id, id);
  if (entry) return 'it was acknowledged meanwhile (its handler finished, or it was acked or parked by someone else)';
  return 'it was deleted from the stream meanwhile (trimmed or XDEL)';
}
