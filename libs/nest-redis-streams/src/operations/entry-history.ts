import type { Redis } from 'ioredis';
import { ENVELOPE } from '../constants.js';
import { compareStreamIds } from '../keys/index.js';
import type { XPendingRow } from '../redis/replies.js';
import { fieldMap, readChainEntries, readChainLetters } from './entry-lineage.js';

/** One thing that happened to an entry, as far as Redis still tells. */
export interface HistoryStep {
  /** When (ms since epoch): from the id's time for adds and parks; 0 when Redis keeps no time. */
  at: number;
  what: 'added' | 'parked' | 're-driven' | 'delivered' | 'acknowledged' | 'waiting';
  /** The entry or dead-letter id the step is about. */
  id: string;
  detail: string;
}

/** An entry's history: first id → parks and re-drives, each → outcome. */
export interface EntryHistory {
  stream: string;
  id: string;
  /** False when the entry is no longer in the stream (trimmed or deleted): only its lineage is left. */
  inStream: boolean;
  steps: HistoryStep[];
  /**
   * Entries of the stream and dead-letter records read to follow its chain (each read at most
   * `scanLimit`); `complete` false when a limit stopped a read.
   */
  scanned: number;
  complete: boolean;
}

const timeOf = (id: string) => Number(id.split('-')[0]);

/**
 * Rebuilds what happened to entry `id` of `stream` and to every entry of its re-drive chain (the
 * first id, each park and each re-drive, from whichever id of the chain is asked): the chain's
 * entries still in the stream (read from the first id on, at most `scanLimit`), the dead letters
 * still in `dlq` parked from any of them (at most `scanLimit`), and, for the chain's newest entry
 * still in the stream, whether each group that runs it holds it pending (deliveries, consumer),
 * acknowledged it or has not read it yet. Reads only; `signal` (the request ended) stops it
 * between pages.
 */
export async function readEntryHistory(
  redis: Redis,
  stream: string,
  dlq: string,
  id: string,
  scanLimit: number,
  signal?: AbortSignal,
): Promise<EntryHistory> {
  const [entry] = await redis.xrange(stream, id, id);
  const own = entry ? fieldMap(entry[1]) : new Map<string, string>();
  const root = (own.get(ENVELOPE.redrivenFrom) && own.get(ENVELOPE.originalId)) || id;
  const chain = await readChainEntries(redis, stream, root, scanLimit, signal);
  // The asked entry is in its chain even when the limit stopped the read before it.
  if (entry && !chain.entries.some((e) => e.id === id)) {
    chain.entries.push({
      id,
      redrivenFrom: root === id ? undefined : own.get(ENVELOPE.redrivenFrom),
      targetGroup: own.get(ENVELOPE.targetGroup),
    });
    chain.entries.sort((a, b) => compareStreamIds(a.id, b.id));
  }
  const ids = new Set([root, ...chain.entries.map((e) => e.id)]);
  const parks = await readChainLetters(redis, dlq, root, ids, scanLimit, signal);

  const steps: HistoryStep[] = [];
  const gone = ' (no longer in the stream: trimmed or deleted)';
  if (!chain.entries.some((e) => e.id === root)) {
    const first = root === id ? `added to ${stream}` : `first added to ${stream}`;
    steps.push({ at: timeOf(root), what: 'added', id: root, detail: `${first}${gone}` });
  }
  for (const e of chain.entries) {
    const where = e.targetGroup ? ` for group ${e.targetGroup}` : '';
    if (!e.redrivenFrom) {
      steps.push({ at: timeOf(e.id), what: 'added', id: e.id, detail: `${e.id === id ? 'added' : 'first added'} to ${stream}` });
      continue;
    }
    steps.push({
      at: timeOf(e.redrivenFrom),
      what: 'parked',
      id: e.redrivenFrom,
      detail: `parked as dead letter ${e.redrivenFrom} in ${dlq}`,
    });
    steps.push({ at: timeOf(e.id), what: 're-driven', id: e.id, detail: `re-driven to ${stream}${where}` });
  }
  for (const { id: letterId, meta } of parks.letters) {
    const error = [meta.error_class, meta.error].filter(Boolean).join(': ');
    const again = meta.id === root ? '' : ' again';
    const detail = `parked${again} as ${letterId} (${meta.reason}) by group ${meta.group} after ${meta.deliveries} deliveries${error ? `: ${error}` : ''}`;
    steps.push({ at: Number(meta.time ?? timeOf(letterId)), what: 'parked', id: letterId, detail });
  }
  // Stable: a park and its re-drive in the same millisecond keep their order.
  steps.sort((a, b) => a.at - b.at);
  if (!entry) {
    const asked = steps.find((s) => s.id === id && s.what !== 'parked');
    if (asked && !asked.detail.endsWith(gone)) asked.detail += gone;
  }

  const newest = chain.entries.at(-1);
  if (newest) {
    const parkedBy = new Set(parks.letters.filter((l) => l.meta.id === newest.id).map((l) => l.meta.group ?? ''));
    steps.push(...(await groupSteps(redis, stream, newest.id, newest.targetGroup, parkedBy)));
  }
  const scanned = chain.scanned + parks.scanned;
  return { stream, id, inStream: Boolean(entry), steps, scanned, complete: chain.complete && parks.complete };
}

/** Where the entry stands in each group that runs it (only the target group after a re-drive). */
async function groupSteps(redis: Redis, stream: string, id: string, target: string | undefined, parkedBy: Set<string>) {
  const steps: HistoryStep[] = [];
  const groups = (await redis.xinfo('GROUPS', stream)) as unknown[][];
  for (const row of groups) {
    const info = new Map<string, unknown>();
    for (let i = 0; i + 1 < row.length; i += 2) info.set(String(row[i]), row[i + 1]);
    const group = String(info.get('name'));
    if (target && group !== target) continue;
    const [pending] = (await redis.xpending(stream, group, id, id, 1)) as XPendingRow[];
    if (pending) {
      const [, consumer, idle, deliveries] = pending;
      const detail = `pending in group ${group} at ${consumer}: ${deliveries} deliveries, idle ${idle} ms`;
      steps.push({ at: Date.now() - Number(idle), what: 'delivered', id, detail });
    } else if (parkedBy.has(group)) continue;
    else if (compareStreamIds(String(info.get('last-delivered-id') ?? '0-0'), id) >= 0) {
      steps.push({ at: 0, what: 'acknowledged', id, detail: `acknowledged by group ${group}` });
    } else steps.push({ at: 0, what: 'waiting', id, detail: `not delivered to group ${group} yet` });
  }
  return steps;
}
