import { compareStreamIds } from '../keys/index.js';
import type { FieldPairs } from './entries.js';
import { evaluate, type ExpressionNode } from './expression/index.js';
import { SEARCH_DONE, encodeSearchCursor, type SearchCursorState } from './search-cursor.js';
import type { DeadLetterInfo, ScannedEntry, SearchSource } from './search-sources.js';
import { type SearchBudget, SearchReadSizer } from './search-read-size.js';
import { searchScope } from './search-scope.js';
import { idTime } from './stream-position.js';

/** One entry a search found. */
export interface SearchHit {
  /** The stream (partition stream) it belongs to. */
  stream: string;
  /** The key it was read from: the stream, or its dead-letter stream. */
  key: string;
  id: string;
  time: number;
  /** As the caller may see them (redacted where a redactor is set); a dead letter's original fields. */
  fields: FieldPairs | null;
  pending?: { consumer: string; idleMs: number; deliveries: number };
  deadLetter?: DeadLetterInfo;
}

/** What a search found and how far it got. */
export interface SearchResult {
  items: SearchHit[];
  /** Entries looked at (matched or not). */
  scanned: number;
  /** Entries that matched: `items.length`. */
  matched: number;
  /** True when the whole window was read: there is nothing more to find. */
  exhausted: boolean;
  /** Why it stopped before the end: the result limit, the entry budget or the time budget. */
  stoppedBy: 'limit' | 'entries' | 'time' | null;
  /** Pass it back as `cursor` to go on from the next entry; null when exhausted. */
  cursor: string | null;
  elapsedMs: number;
}

/** Rewrites fields before matching and showing (the console's redaction hook). */
export type SearchRedactor = (fields: FieldPairs, where: { stream: string; group?: string; id: string }) => FieldPairs;

interface Lane {
  source: SearchSource;
  /** The last id looked at, null before the first, `SEARCH_DONE` when read to the end. */
  position: string | null;
  buffer: ScannedEntry[];
  /** The next entry of `buffer` to look at (an index, not shift(): pages hold up to 500 entries). */
  at: number;
  /** The last read returned a short page: after the buffer, the key has nothing more. */
  ended: boolean;
}

/**
 * Reads the sources page by page and merges them in id order (newest or oldest first), so that a
 * search over the partitions of a stream reads as one stream. Each entry looked at moves its key's
 * position, so the cursor resumes exactly after it: no entry is skipped or shown twice. Entries
 * fetched but not looked at are read again on resume, so reads are sized by what the request can
 * still look at (`SearchReadSizer`). Stops at `limit` matches, after `entries` looked at, or once
 * `ms` have passed (checked between entries and before each read).
 */
export async function runSearch(
  sources: SearchSource[],
  condition: ExpressionNode | null,
  state: SearchCursorState,
  budget: SearchBudget,
  options: { redact?: SearchRedactor; group?: string; signal?: AbortSignal },
): Promise<SearchResult> {
  const started = Date.now();
  const lanes: Lane[] = sources.map((source, i) => ({ source, position: state.positions[i], buffer: [], at: 0, ended: false }));
  const items: SearchHit[] = [];
  let scanned = 0;
  let stoppedBy: SearchResult['stoppedBy'] = null;
  const sizer = new SearchReadSizer(budget, started);
  const before = (a: string, b: string) => (state.newest ? compareStreamIds(a, b) > 0 : compareStreamIds(a, b) < 0);
  for (;;) {
    if (items.length >= budget.limit) stoppedBy = 'limit';
    else if (scanned >= budget.entries) stoppedBy = 'entries';
    // At least one entry per request, so that resuming always makes progress on a slow machine.
    else if (scanned > 0 && Date.now() - started >= budget.ms) stoppedBy = 'time';
    if (stoppedBy) break;
    options.signal?.throwIfAborted();
    const empty = lanes.filter((lane) => lane.position !== SEARCH_DONE && lane.at === lane.buffer.length);
    const reading = empty.filter((lane) => !lane.ended);
    for (const lane of empty) if (lane.ended) lane.position = SEARCH_DONE;
    if (reading.length > 0) await read(reading, sizer.next(reading.length, scanned), sizer);
    let next: Lane | undefined;
    for (const lane of lanes)
      if (lane.at < lane.buffer.length && (!next || before(lane.buffer[lane.at].id, next.buffer[next.at].id))) next = lane;
    if (!next) break;
    const entry = next.buffer[next.at++];
    next.position = entry.id;
    scanned += 1;
    const where = { stream: next.source.stream, group: entry.deadLetter?.group ?? options.group, id: entry.id };
    const fields = entry.fields && options.redact ? options.redact(entry.fields, where) : entry.fields;
    if (condition === null || evaluate(condition, searchScope(entry, fields))) {
      items.push({
        stream: next.source.stream,
        key: next.source.key,
        id: entry.id,
        time: idTime(entry.id),
        fields,
        ...extras(entry),
      });
    }
  }
  const drained = (l: Lane) => l.ended && l.at === l.buffer.length;
  const exhausted = lanes.every((l) => l.position === SEARCH_DONE || drained(l));
  const positions = lanes.map((l) => (drained(l) ? SEARCH_DONE : l.position));
  return {
    items,
    scanned,
    matched: items.length,
    exhausted,
    stoppedBy: exhausted ? null : stoppedBy,
    cursor: exhausted ? null : encodeSearchCursor({ ...state, positions }),
    elapsedMs: Date.now() - started,
  };
}

/** Refills the lanes whose buffers were looked at to the end, `count` entries each, in parallel. */
async function read(lanes: Lane[], count: number, sizer: SearchReadSizer): Promise<void> {
  let entries = 0;
  let chars = 0;
  await Promise.all(
    lanes.map(async (lane) => {
      lane.buffer = await lane.source.read(lane.position, count);
      lane.at = 0;
      lane.ended = lane.buffer.length < count;
      if (lane.buffer.length === 0) lane.position = SEARCH_DONE;
      entries += lane.buffer.length;
      for (const entry of lane.buffer) chars += entry.chars;
    }),
  );
  sizer.fetched(entries, chars);
}

function extras(entry: ScannedEntry): Pick<SearchHit, 'pending' | 'deadLetter'> {
  if (entry.pending) return { pending: entry.pending };
  if (entry.deadLetter) return { deadLetter: entry.deadLetter };
  return {};
}
