import type { Redis } from 'ioredis';
import { ENVELOPE } from '../constants.js';
import { splitDeadLetterFields } from '../dead-letter/dead-letter-record.js';
import { compareStreamIds, startAfter } from '../keys/index.js';
import type { XPendingRow } from '../redis/replies.js';

/** One thing that happened to an entry, as far as Redis still tells. */
export interface HistoryStep {
  /** When (ms since epoch): from the id's time for adds and parks; 0 when Redis keeps no time. */
  at: number;
  what: 'added' | 'parked' | 're-driven' | 'delivered' | 'acknowledged' | 'waiting';
  /** The entry or dead-letter id the step is about. */
  id: string;
  detail: string;
}

/** An entry's history: original id → deliveries → parked → re-driven → outcome. */
export interface EntryHistory {
  stream: string;
  id: string;
  /** False when the entry is no longer in the stream (trimmed or deleted): only its lineage is left. */
  inStream: boolean;
  steps: HistoryStep[];
  /** Dead-letter records read to find its parks; `complete` false when the scan limit stopped it. */
  scanned: number;
  complete: boolean;
}

const timeOf = (id: string) => Number(id.split('-')[0]);

/**
 * Rebuilds what happened to entry `id` of `stream`: its lineage fields (the dead letter it was
 * re-driven from and its first id), the dead letters that name it in `dlq:id` (read from its time
 * on, at most `scanLimit`), and in each group that runs it whether it is pending (deliveries,
 * consumer), acknowledged or not delivered yet. Reads only.
 */
export async function readEntryHistory(
  redis: Redis,
  stream: string,
  dlq: string,
  id: string,
  scanLimit: number,
): Promise<EntryHistory> {
  const [entry] = await redis.xrange(stream, id, id);
  const fields = new Map<string, string>();
  for (let i = 0; entry && i + 1 < entry[1].length; i += 2) fields.set(entry[1][i], entry[1][i + 1]);
  const [from, first, target] = [
    fields.get(ENVELOPE.redrivenFrom),
    fields.get(ENVELOPE.originalId),
    fields.get(ENVELOPE.targetGroup),
  ];
  const steps: HistoryStep[] = [];
  if (from) {
    if (first) steps.push({ at: timeOf(first), what: 'added', id: first, detail: `first added to ${stream}` });
    steps.push({ at: timeOf(from), what: 'parked', id: from, detail: `parked as dead letter ${from} in ${dlq}` });
  }
  const where = target ? ` for group ${target}` : '';
  const gone = entry ? '' : ' (no longer in the stream: trimmed or deleted)';
  steps.push({
    at: timeOf(id),
    what: from ? 're-driven' : 'added',
    id,
    detail: `${from ? 're-driven' : 'added'} to ${stream}${where}${gone}`,
  });

  const parkedBy = new Set<string>();
  let scanned = 0;
  let start: string | null = `${timeOf(id)}-0`;
  while (start !== null && scanned < scanLimit) {
    const page: Array<[string, string[]]> = await redis.xrange(dlq, start, '+', 'COUNT', Math.min(500, scanLimit - scanned));
    scanned += page.length;
    for (const [letterId, raw] of page) {
      const { meta } = splitDeadLetterFields(raw);
      if (meta.id !== id) continue;
      parkedBy.add(meta.group ?? '');
      const error = [meta.error_class, meta.error].filter(Boolean).join(': ');
      const detail = `parked again as ${letterId} (${meta.reason}) by group ${meta.group} after ${meta.deliveries} deliveries${error ? `: ${error}` : ''}`;
      steps.push({ at: Number(meta.time ?? timeOf(letterId)), what: 'parked', id: letterId, detail });
    }
    start = page.length < 500 ? null : startAfter(page[page.length - 1][0]);
  }
  if (entry) steps.push(...(await groupSteps(redis, stream, id, target, parkedBy)));
  return { stream, id, inStream: Boolean(entry), steps, scanned, complete: start === null };
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
