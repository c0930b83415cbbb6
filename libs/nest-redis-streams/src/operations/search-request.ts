import type { Redis } from 'ioredis';
import { partitionStreams } from '../keys/index.js';
import { OperationError } from './errors/operation.error.js';
import { parseExpression } from './expression/index.js';
import { OPERATIONS_DEFAULTS, SEARCH_DEFAULTS } from './operations.constants.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import type { StreamSetting } from './overview.js';
import { decodeSearchCursor, type SearchCursorState } from './search-cursor.js';
import { type SearchSource, type SearchTarget, searchSource } from './search-sources.js';
import { type SearchRedactor, type SearchResult, runSearch } from './search.js';
import { searchWindow } from './search-window.js';
import { parseCount } from './stream-position.js';

/** A search: where to look, what to match, and how much it may cost. */
export interface SearchRequest {
  /** The condition (docs/search.md); absent or empty: every entry in the window. */
  where?: string;
  /** A group's pending entries instead of the stream. */
  group?: string;
  /** The stream's dead-letter stream instead of the stream. */
  deadLetters?: boolean;
  /** Search every partition stream of the logical stream, merged in id order. @default 1 */
  partitions?: number;
  /** Start of the window: a duration before now (`15m`), an ISO date, ms since the epoch or an id. */
  since?: string | number;
  /** End of the window, in the same forms. */
  until?: string | number;
  /** Newest entries first (XREVRANGE); not for a PEL. @default false */
  newest?: boolean;
  /** Matches returned at most (digits as text are taken too, as a query string gives them). @default 50 */
  limit?: number | string;
  /** Entries looked at at most. @default 10000 */
  budgetEntries?: number | string;
  /** Milliseconds at most (a request stops between entries). @default 2000 */
  budgetMs?: number | string;
  /** A previous answer's cursor: goes on after the last entry it looked at, in its window and order. */
  cursor?: string;
  /** Rewrites fields before they are matched and returned: a condition never sees what it hides. */
  redact?: SearchRedactor;
  /** Stops the search between entries (the console: the client left). */
  signal?: AbortSignal;
}

function targetOf(request: SearchRequest): SearchTarget {
  if (request.group !== undefined && request.deadLetters)
    throw new OperationError('bad-request', "Search either a group's pending entries (group) or the dead letters, not both.");
  if (request.group !== undefined) {
    if (typeof request.group !== 'string' || request.group === '')
      throw new OperationError('bad-request', OPERATIONS_MESSAGES.badName('group', request.group));
    return { kind: 'pending', group: request.group };
  }
  return request.deadLetters ? { kind: 'dead-letters' } : { kind: 'stream' };
}

function describeTarget(stream: string, target: SearchTarget, partitions: number): string {
  const what = target.kind === 'pending' ? `pending:${target.group}` : target.kind;
  return `${what} of ${stream}${partitions > 1 ? ` (${partitions} partitions)` : ''}`;
}

/** A checked search request: what `searchStreams` reads, worked out before any read. */
export interface SearchPlan {
  target: SearchTarget;
  budget: { limit: number; entries: number; ms: number; pageSize: number };
  condition: ReturnType<typeof parseExpression> | null;
  keys: string[];
  state: SearchCursorState;
}

/**
 * Checks every part of a search request (its target, numbers, condition, window or cursor) without
 * touching Redis, so that a caller (the CLI) can refuse bad input whether Redis answers or not.
 */
export function planSearch(stream: string, request: SearchRequest): SearchPlan {
  const target = targetOf(request);
  const partitions = parseCount(request.partitions, 1, OPERATIONS_DEFAULTS.maxPartitions, 'partitions');
  const budget = {
    limit: parseCount(request.limit, SEARCH_DEFAULTS.limit, SEARCH_DEFAULTS.maxLimit, 'limit'),
    entries: parseCount(request.budgetEntries, SEARCH_DEFAULTS.budgetEntries, SEARCH_DEFAULTS.maxBudgetEntries, 'budget entries'),
    ms: parseCount(request.budgetMs, SEARCH_DEFAULTS.budgetMs, SEARCH_DEFAULTS.maxBudgetMs, 'budget ms'),
    pageSize: SEARCH_DEFAULTS.pageSize,
  };
  const condition = request.where === undefined || request.where.trim() === '' ? null : parseExpression(request.where);
  const keys = partitionStreams(stream, partitions);
  const description = describeTarget(stream, target, partitions);
  const state = request.cursor ? resume(request, description, keys.length) : fresh(request, description, keys.length, target);
  return { target, budget, condition, keys, state };
}

/**
 * Checks a search request and runs it over the served stream keys: each key's setting comes from
 * `served` (so a stream the console does not serve is refused as not found), and each key is read
 * by its own commands, so on a cluster every partition is read on the node of its slot.
 */
export async function searchStreams(
  redis: Redis,
  served: (stream: string) => Promise<StreamSetting>,
  stream: string,
  request: SearchRequest,
): Promise<SearchResult> {
  const { target, budget, condition, keys, state } = planSearch(stream, request);
  const settings = await Promise.all(keys.map((key) => served(key)));
  const sources: SearchSource[] = settings.map((setting) =>
    searchSource(
      redis,
      target,
      setting.stream,
      target.kind === 'dead-letters' ? setting.deadLetterStream : setting.stream,
      state.window,
      state.newest,
    ),
  );
  return runSearch(sources, condition, state, budget, {
    redact: request.redact,
    group: target.kind === 'pending' ? target.group : undefined,
    signal: request.signal,
  });
}

function fresh(request: SearchRequest, description: string, keys: number, target: SearchTarget): SearchCursorState {
  if (request.newest && target.kind === 'pending')
    throw new OperationError(
      'bad-request',
      "A group's pending entries are searched oldest first only (XPENDING has no reverse order); leave out newest.",
    );
  const window = searchWindow(request.since, request.until);
  return { target: description, newest: request.newest === true, window, positions: Array.from({ length: keys }, () => null) };
}

function resume(request: SearchRequest, description: string, keys: number): SearchCursorState {
  const given = (['since', 'until', 'newest'] as const).filter(
    (k) => request[k] !== undefined && request[k] !== '' && request[k] !== false,
  );
  if (given.length > 0)
    throw new OperationError(
      'bad-request',
      `A cursor carries its window and order: leave out ${given.join(', ')} when resuming (the condition and budgets may change).`,
    );
  return decodeSearchCursor(String(request.cursor), description, keys);
}
