import type { Redis } from 'ioredis';
import { ENVELOPE } from '../constants.js';
import { splitDeadLetterFields } from '../dead-letter/dead-letter-record.js';
import { startAfter } from '../keys/index.js';

/** One entry of a re-drive chain still in the stream: its id and the lineage it carries. */
export interface ChainEntry {
  id: string;
  /** The dead letter it was re-driven from; absent for the chain's first entry. */
  redrivenFrom?: string;
  /** The group it was re-driven to (`nrs:group`), when one. */
  targetGroup?: string;
}

/** A dead letter of the chain still in the dead-letter stream. */
export interface ChainLetter {
  id: string;
  meta: Record<string, string>;
}

/** How much a bounded read got through. */
export interface ScanOutcome {
  scanned: number;
  /** False when `limit` stopped the read before the end of the stream. */
  complete: boolean;
}

const PAGE = 500;

/** The fields of an entry as a map (the first of a repeated name wins, as the codec reads them). */
export function fieldMap(flat: readonly string[]): Map<string, string> {
  const fields = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) if (!fields.has(flat[i])) fields.set(flat[i], flat[i + 1]);
  return fields;
}

/**
 * Reads `key` oldest first from `start`, in pages of 500, at most `limit` entries; `signal` (the
 * request ended) stops it between pages.
 */
async function scanRange(
  redis: Redis,
  key: string,
  start: string,
  limit: number,
  signal: AbortSignal | undefined,
  visit: (id: string, fields: string[]) => void,
): Promise<ScanOutcome> {
  let scanned = 0;
  let from: string | null = start;
  while (from !== null && scanned < limit) {
    signal?.throwIfAborted();
    const count = Math.min(PAGE, limit - scanned);
    const page: Array<[string, string[]]> = await redis.xrange(key, from, '+', 'COUNT', count);
    scanned += page.length;
    for (const [id, fields] of page) visit(id, fields);
    from = page.length < count ? null : startAfter(page[page.length - 1][0]);
  }
  return { scanned, complete: from === null };
}

/**
 * The entries of the re-drive chain that starts at `root`, as far as the stream still holds them:
 * `root` itself and every entry whose `nrs:original_id` names it (each re-drive copies it, so the
 * chain is found from any of its ids, and the dead letters between, deleted by their re-drives,
 * are still named by `nrs:redriven_from`). Reads the stream from `root` on, at most `limit` entries.
 */
export async function readChainEntries(
  redis: Redis,
  stream: string,
  root: string,
  limit: number,
  signal?: AbortSignal,
): Promise<{ entries: ChainEntry[]; rootInStream: boolean } & ScanOutcome> {
  const entries: ChainEntry[] = [];
  let rootInStream = false;
  const outcome = await scanRange(redis, stream, root, limit, signal, (id, flat) => {
    if (id === root) rootInStream = true;
    else if (!flat.includes(ENVELOPE.originalId)) return;
    const fields = fieldMap(flat);
    const redrivenFrom = fields.get(ENVELOPE.redrivenFrom);
    if (id !== root && (fields.get(ENVELOPE.originalId) !== root || !redrivenFrom)) return;
    entries.push({ id, redrivenFrom: id === root ? undefined : redrivenFrom, targetGroup: fields.get(ENVELOPE.targetGroup) });
  });
  return { entries, rootInStream, ...outcome };
}

/**
 * The dead letters still in `dlq` of any entry of the chain: those parked from one of `ids`, or
 * naming `root` as their original id (a chain entry the stream no longer holds). Reads from
 * `root`'s time on, at most `limit` records.
 */
export async function readChainLetters(
  redis: Redis,
  dlq: string,
  root: string,
  ids: ReadonlySet<string>,
  limit: number,
  signal?: AbortSignal,
): Promise<{ letters: ChainLetter[] } & ScanOutcome> {
  const letters: ChainLetter[] = [];
  const outcome = await scanRange(redis, dlq, `${root.split('-')[0]}-0`, limit, signal, (id, flat) => {
    const { meta, original } = splitDeadLetterFields(flat);
    if (ids.has(meta.id ?? '') || fieldMap(original).get(ENVELOPE.originalId) === root) letters.push({ id, meta });
  });
  return { letters, ...outcome };
}
