/** The largest part of a stream id (2^64 - 1): `<ms>-<MAX>` is the last id of that millisecond. */
export const MAX_ID_PART = '18446744073709551615';

const parts = (id: string) => id.split('-').map((p) => BigInt(p || '0'));

/**
 * The XRANGE start just after `id` (`(<id>`), or null when no id can follow it: Redis refuses
 * `(` before the last possible id ("invalid start ID for the interval"), and nothing is there.
 */
export function startAfter(id: string): string | null {
  const [ms, seq = 0n] = parts(id);
  const max = BigInt(MAX_ID_PART);
  return ms === max && seq === max ? null : `(${id}`;
}

/** The XREVRANGE end just before `id` (`(<id>`), or null when no id can precede it (`0-0`). */
export function endBefore(id: string): string | null {
  const [ms, seq = 0n] = parts(id);
  return ms === 0n && seq === 0n ? null : `(${id}`;
}
