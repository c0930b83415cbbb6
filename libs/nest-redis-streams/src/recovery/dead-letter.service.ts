import type { Cluster, Redis } from 'ioredis';
import { defaultDeadLetterStream } from '../server/resolve-options.js';
import { type DeadLetterReason, splitDeadLetterFields } from './dead-letter-record.js';

/** One parked entry as an operator sees it. */
export interface DeadLetter {
  /** Id in the dead-letter stream. */
  id: string;
  reason: DeadLetterReason;
  /** Stream and entry id it came from. */
  stream: string;
  originalId: string;
  group: string;
  consumer: string;
  error: string;
  errorClass: string;
  deliveries: number;
  /** When it was parked (ms since epoch). */
  parkedAt: number;
  /** The original fields, as the producer wrote them. */
  fields: Record<string, string>;
}

/** A page of dead letters; pass `next` as `after` to read on, null at the end. */
export interface DeadLetterPage {
  items: DeadLetter[];
  next: string | null;
}

// Re-drive: XADD to the source and XDEL from the dead-letter stream in one script, so a retried
// call cannot re-add an entry twice: once deleted, the second call finds nothing and returns false.
const REDRIVE = `
local entry = redis.call('XRANGE', KEYS[1], ARGV[1], ARGV[1])[1]
if not entry then return false end
local args = {'XADD', KEYS[2], '*'}
for i = 2, #ARGV do args[#args + 1] = ARGV[i] end
local id = redis.call(unpack(args))
redis.call('XDEL', KEYS[1], ARGV[1])
return id`;

/**
 * The operator's path for parked entries: list and inspect with paging, re-drive to the source
 * stream with a fresh delivery budget, discard. Every call is safe to retry.
 */
export class DeadLetterService {
  constructor(private readonly redis: Redis | Cluster) {}

  /** Dead-letter stream name for a source stream (the transport's default naming). */
  static streamFor(stream: string, cluster = false): string {
    return defaultDeadLetterStream(stream, cluster);
  }

  /** Oldest first; `after` is the last id of the previous page. */
  async list(deadLetterStream: string, options: { after?: string; count?: number } = {}): Promise<DeadLetterPage> {
    const count = options.count ?? 50;
    const start = options.after ? `(${options.after}` : '-';
    const entries = await this.redis.xrange(deadLetterStream, start, '+', 'COUNT', count);
    const items = entries.map(([id, fields]) => toDeadLetter(id, fields));
    return { items, next: items.length === count ? items[items.length - 1].id : null };
  }

  async inspect(deadLetterStream: string, id: string): Promise<DeadLetter | null> {
    const [entry] = await this.redis.xrange(deadLetterStream, id, id);
    return entry ? toDeadLetter(entry[0], entry[1]) : null;
  }

  async count(deadLetterStream: string): Promise<number> {
    return this.redis.xlen(deadLetterStream);
  }

  /**
   * Re-adds the entry's original fields to the stream it came from (a new entry id, so every
   * group sees it with a fresh delivery count) and removes it from the dead-letter stream.
   * Resolves with the new entry id, or null when it was already re-driven or discarded.
   */
  async redrive(deadLetterStream: string, id: string): Promise<string | null> {
    const letter = await this.inspect(deadLetterStream, id);
    if (!letter) return null;
    const original = Object.entries(letter.fields).flat();
    if (original.length === 0) {
      throw new Error(`Dead letter ${id} in "${deadLetterStream}" is a tombstone (${letter.reason}): it has no payload to re-drive. Discard it.`);
    }
    const result = await this.redis.eval(REDRIVE, 2, deadLetterStream, letter.stream, id, ...original);
    return (result as string | null) ?? null;
  }

  /** Deletes a dead letter for good. Resolves false when it was not there (already discarded). */
  async discard(deadLetterStream: string, id: string): Promise<boolean> {
    return (await this.redis.xdel(deadLetterStream, id)) === 1;
  }
}

function toDeadLetter(id: string, fields: string[]): DeadLetter {
  const { meta, original } = splitDeadLetterFields(fields);
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < original.length; i += 2) {
    Object.defineProperty(record, original[i], { value: original[i + 1], enumerable: true, writable: true, configurable: true });
  }
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
    fields: record,
  };
}
