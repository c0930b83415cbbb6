// Malformed and hostile stream entries for the chaos suite's scenario 11, built from a seed so a
// failing run can be repeated. Each says what the transport must do with it: hand it to the
// handler (a foreign field map, or an envelope whose data decodes) or park it as undecodable.
import type { Expectation } from './chaos-ledger.js';

/** One entry to XADD; values may be raw bytes. */
export interface HostileEntry {
  label: string;
  fields: Array<string | Buffer>;
  /** Set when the entry carries an `event_id` field (the ledger key); else keyed by entry id. */
  eventId?: string;
  expect: Expectation;
}

const MB = 1024 * 1024;
const POLLUTERS = ['__proto__', 'constructor', 'prototype', 'hasOwnProperty', 'toString', 'valueOf'];

/** A small deterministic PRNG (mulberry32). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` hostile entries: every kind below in turn, with random details. */
export function hostileEntries(run: string, count: number, seed: number): HostileEntry[] {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];
  const text = (length: number) =>
    Array.from({ length }, () => String.fromCodePoint(32 + Math.floor(random() * 0x2fff))).join('');
  const bytes = (length: number) => {
    const buf = Buffer.alloc(length);
    for (let i = 0; i < length; i++) buf[i] = Math.floor(random() * 256);
    buf[0] = 0xff; // never valid UTF-8, so never valid JSON
    return buf;
  };
  const envelope = (i: number, data: string | Buffer, extra: Array<string | Buffer> = []) => {
    const eventId = `${run}-h${i}`;
    return { eventId, fields: ['v', 'nrs/1', 'event_id', eventId, 'data', data, ...extra] };
  };
  const kinds: Array<(i: number) => HostileEntry> = [
    (_i) => {
      const fields: string[] = [];
      for (let f = 0, n = 1 + Math.floor(random() * 12); f < n; f++)
        fields.push(random() < 0.3 ? pick(POLLUTERS) : text(1 + Math.floor(random() * 20)), text(Math.floor(random() * 50)));
      return { label: 'random field map', fields, expect: 'process' };
    },
    (i) => ({ label: 'invalid JSON in data', ...envelope(i, `{"amount": ${i},`), expect: 'dead-letter' }),
    (i) => ({ label: 'invalid JSON in headers', ...envelope(i, '{}', ['headers', '{nope']), expect: 'dead-letter' }),
    (i) => ({ label: 'headers not an object', ...envelope(i, '{}', ['headers', '[1,2]']), expect: 'dead-letter' }),
    (i) => ({
      label: 'envelope without data',
      eventId: `${run}-h${i}`,
      fields: ['v', 'nrs/1', 'event_id', `${run}-h${i}`],
      expect: 'dead-letter',
    }),
    (i) => ({ label: '1 MB JSON data', ...envelope(i, JSON.stringify({ blob: 'x'.repeat(MB) })), expect: 'process' }),
    (i) => ({ label: '1 MB foreign value', fields: ['blob', 'y'.repeat(MB), 'n', String(i)], expect: 'process' }),
    (i) => ({ label: 'binary bytes in data', ...envelope(i, bytes(64)), expect: 'dead-letter' }),
    (i) => ({ label: 'binary field names and values', fields: [bytes(8), bytes(32), 'n', String(i)], expect: 'process' }),
    // Decodes fine (the envelope ignores fields it does not know), fails every delivery, so it is
    // parked by the retry path: its binary field must reach the dead-letter stream byte for byte.
    (i) => ({
      label: 'binary field beside a poison envelope',
      ...envelope(i, '{"chaos":{"poison":true}}', [bytes(8), bytes(32)]),
      expect: 'dead-letter',
    }),
    (i) => ({
      label: '__proto__ in data',
      ...envelope(i, '{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}'),
      expect: 'process',
    }),
    (i) => ({
      label: '__proto__ in headers',
      ...envelope(i, '{}', ['headers', '{"__proto__":{"polluted":"yes"},"toString":"x"}']),
      expect: 'process',
    }),
    (i) => ({
      label: '__proto__ field',
      fields: ['__proto__', '{"polluted":true}', 'constructor', 'prototype', 'n', String(i)],
      expect: 'process',
    }),
    (i) => ({ label: 'unknown envelope version', fields: ['v', 'nrs/99', 'data', '{bad', 'n', String(i)], expect: 'process' }),
    (i) => ({ label: 'null data', ...envelope(i, 'null'), expect: 'process' }),
    (i) => ({
      label: '1,000 fields',
      fields: Array.from({ length: 2000 }, (_, f) => (f % 2 === 0 ? `f${f}` : String(i))),
      expect: 'process',
    }),
    (i) => ({ label: 'empty names and values', fields: ['', '', ' ', '\r\n', 'n', String(i)], expect: 'process' }),
  ];
  return Array.from({ length: count }, (_, i) => kinds[i % kinds.length](i));
}
