import { decodeSearchCursor, encodeSearchCursor } from './search-cursor.js';
import { searchBound, searchWindow } from './search-window.js';

const NOW = 1_800_000_000_000;

describe('search windows and cursors', () => {
  it.each([
    ['15m', 'since', `${NOW - 900_000}-0`],
    ['2h', 'until', `${NOW - 7_200_000}-18446744073709551615`],
    ['7d', 'since', `${NOW - 604_800_000}-0`],
    ['500ms', 'since', `${NOW - 500}-0`],
    ['1700000000000', 'since', '1700000000000-0'],
    ['1700000000000', 'until', '1700000000000-18446744073709551615'],
    ['1700000000000-7', 'until', '1700000000000-7'],
    ['2026-05-01T00:00:00Z', 'since', `${Date.parse('2026-05-01T00:00:00Z')}-0`],
  ] as const)('%s as %s is %s', (value, side, id) => {
    expect(searchBound(value, side, NOW)).toBe(id);
  });

  it('refuses what is not a time, naming the value and the forms it takes', () => {
    for (const bad of ['soon', '15 minutes', '-5m', '1y', '01-02-2026', '1-2-3'])
      expect(() => searchBound(bad, 'since', NOW)).toThrow(/since must be a duration before now \(15m, 2h, 7d\), an ISO date/);
    expect(() => searchBound('1-99999999999999999999', 'until', NOW)).toThrow(/out of range/);
    expect(() => searchWindow('1h', '2h', NOW)).toThrow(/ends \(until .*\) before it starts/);
    expect(searchWindow(undefined, '', NOW)).toEqual({ start: '-', end: '+' });
  });

  it('round-trips a cursor and refuses a tampered, foreign or oversized one', () => {
    const state = {
      target: 'stream of orders',
      newest: true,
      window: { start: '5-0', end: '+' },
      positions: ['7-1', null, 'done'],
    };
    const cursor = encodeSearchCursor(state);
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(decodeSearchCursor(cursor, 'stream of orders', 3)).toEqual(state);
    expect(() => decodeSearchCursor(cursor, 'dead-letters of orders', 3)).toThrow(/belongs to a search of "stream of orders"/);
    expect(() => decodeSearchCursor(cursor, 'stream of orders', 2)).toThrow(/covers 3 stream keys, this search 2/);
    expect(() => decodeSearchCursor('%%%', 'stream of orders', 3)).toThrow(/not a cursor a search handed out/);
    expect(() => decodeSearchCursor('x'.repeat(100_001), 'stream of orders', 3)).toThrow(/longer than 100000 characters/);
    const forged = (w: unknown[], p: unknown[]) =>
      Buffer.from(JSON.stringify({ v: 1, t: 'stream of orders', n: 0, w, p })).toString('base64url');
    expect(() => decodeSearchCursor(forged(['-', '+'], [{}, null, null]), 'stream of orders', 3)).toThrow(
      /a position is not an id/,
    );
    expect(() => decodeSearchCursor(forged(['__proto__', '+'], [null, null, null]), 'stream of orders', 3)).toThrow(
      /A cursor window end must be a stream id/,
    );
  });
});
