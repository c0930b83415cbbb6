import { OperationError } from './errors/operation.error.js';
import type { SearchWindow } from './search-window.js';
import { parseStreamId } from './stream-position.js';

/** Where a search stopped: its window and order, and per stream key the last entry it looked at. */
export interface SearchCursorState {
  /** What was searched: `stream`, `pending:<group>` or `dead-letters`, and over which stream. */
  target: string;
  newest: boolean;
  window: SearchWindow;
  /** Per stream key (partition order): the last id scanned, null before the first, `SEARCH_DONE` when read to the end. */
  positions: Array<string | null>;
}

/** The position of a stream key read to the end of the window. */
export const SEARCH_DONE = 'done';

/** Longer cursors are refused before decoding: 1,024 partitions need about 60 KB. */
const MAX_CURSOR_LENGTH = 100_000;

/** The cursor as an opaque URL-safe string. */
export function encodeSearchCursor(state: SearchCursorState): string {
  const { target, newest, window, positions } = state;
  return Buffer.from(
    JSON.stringify({ v: 1, t: target, n: newest ? 1 : 0, w: [window.start, window.end], p: positions }),
  ).toString('base64url');
}

function invalid(why: string): OperationError {
  return new OperationError('bad-request', `The search cursor is not valid (${why}); start the search again without it.`);
}

const bound = (value: unknown) => {
  if (value === '-' || value === '+') return value;
  if (typeof value !== 'string') throw invalid('a window end is not an id');
  return parseStreamId(value, 'A cursor window end');
};

/**
 * Decodes and checks a cursor: every part must have the shape `encodeSearchCursor` writes, and it
 * must belong to the same target and number of stream keys as the search resuming it.
 */
export function decodeSearchCursor(cursor: string, target: string, keys: number): SearchCursorState {
  if (cursor.length > MAX_CURSOR_LENGTH) throw invalid(`longer than ${MAX_CURSOR_LENGTH} characters`);
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid('not a cursor a search handed out');
  }
  const c = raw as { v?: unknown; t?: unknown; n?: unknown; w?: unknown; p?: unknown };
  if (!c || typeof c !== 'object' || c.v !== 1 || !Array.isArray(c.w) || c.w.length !== 2 || !Array.isArray(c.p))
    throw invalid('not a cursor a search handed out');
  if (c.t !== target)
    throw new OperationError(
      'bad-request',
      `This cursor belongs to a search of ${JSON.stringify(String(c.t)).slice(0, 200)}, not of ${JSON.stringify(target)}: ` +
        'resume with the same stream, group or dead letters and partitions.',
    );
  if (c.p.length !== keys) throw invalid(`it covers ${c.p.length} stream keys, this search ${keys}`);
  const positions = c.p.map((p: unknown) =>
    p === null || p === SEARCH_DONE ? p : typeof p === 'string' ? parseStreamId(p, 'A cursor position') : bad(),
  );
  return { target, newest: c.n === 1, window: { start: bound(c.w[0]), end: bound(c.w[1]) }, positions };
}

function bad(): never {
  throw invalid('a position is not an id');
}
