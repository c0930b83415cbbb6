/**
 * Stream entry ids (`<ms>-<seq>`) compared as numbers. Both parts are unsigned 64-bit integers in
 * Redis, so they are handled as BigInt: comparing them as strings puts "10-0" before "9-0".
 */

const MAX_PART = 2n ** 64n - 1n;

function parse(id: string): [ms: bigint, seq: bigint] {
  const [ms, seq = '0'] = id.split('-');
  return [BigInt(ms), BigInt(seq)];
}

/** Negative when `a` comes before `b` in a stream, 0 when equal, positive after. */
export function compareStreamIds(a: string, b: string): number {
  const [aMs, aSeq] = parse(a);
  const [bMs, bSeq] = parse(b);
  if (aMs !== bMs) return aMs < bMs ? -1 : 1;
  if (aSeq !== bSeq) return aSeq < bSeq ? -1 : 1;
  return 0;
}

/**
 * `compareStreamIds` for ids exactly as Redis returns them (`<ms>-<seq>`, no leading zeros), without
 * BigInt or substrings: the longer number is the larger, equal lengths compare digit by digit. For
 * hot paths (the ack batcher runs it twice per acked id), so it allocates nothing.
 */
export function compareEntryIds(a: string, b: string): number {
  const aDash = a.indexOf('-');
  const bDash = b.indexOf('-');
  if (aDash !== bDash) return aDash - bDash;
  for (let i = 0; i < aDash; i++) {
    const diff = a.charCodeAt(i) - b.charCodeAt(i);
    if (diff !== 0) return diff;
  }
  if (a.length !== b.length) return a.length - b.length;
  for (let i = aDash + 1; i < a.length; i++) {
    const diff = a.charCodeAt(i) - b.charCodeAt(i);
    if (diff !== 0) return diff;
  }
  return 0;
}

/**
 * The smallest id after `id`: what `XTRIM MINID` needs to remove `id` and everything before it.
 * No id follows the last one (2^64-1 on both sides): it is returned itself, since Redis refuses
 * any id past it, and a trim that keeps that one entry is safe where one that fails trims nothing.
 */
export function nextStreamId(id: string): string {
  const [ms, seq] = parse(id);
  if (seq !== MAX_PART) return `${ms}-${seq + 1n}`;
  return ms === MAX_PART ? `${ms}-${seq}` : `${ms + 1n}-0`;
}

/** The earlier of two ids. */
export function minStreamId(a: string, b: string): string {
  return compareStreamIds(a, b) <= 0 ? a : b;
}

/** The id below which entries are older than `ageMs` (XTRIM/XADD `MINID` for a time-based retention). */
export function streamIdForAge(ageMs: number, now = Date.now()): string {
  return `${Math.max(0, now - ageMs)}-0`;
}
