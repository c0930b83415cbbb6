import { hasHashTag, keyBeside } from './slots.js';

/** The two keys of a stream's schedule (delayed entries waiting for their time). */
export interface ScheduleKeys {
  /** Sorted set: member = event id, score = due time (ms since epoch). */
  readonly due: string;
  /** Hash: event id → the packed entry (XADD head and envelope fields). */
  readonly entries: string;
}

/**
 * The schedule of `stream`: `{orders}:schedule` and `{orders}:schedule:entries` (a stream with its
 * own hash tag keeps it: `orders:{orders:3}:schedule`). Always in the stream's hash slot, cluster
 * or not, so the mover's script (read the schedule, XADD, remove) touches one slot, and every
 * producer and server agrees on the names without knowing the topology.
 */
export function scheduleKeysOf(stream: string): ScheduleKeys {
  return { due: besideStream(stream, 'schedule'), entries: besideStream(stream, 'schedule:entries') };
}

/**
 * Like keyBeside, but a name with a stray `{` (no tag) keeps it inside the new tag, which then
 * hashes exactly like the name. Only a name with a `}` and no tag cannot be tagged like itself.
 */
function besideStream(stream: string, suffix: string): string {
  if (hasHashTag(stream) || stream.includes('}')) return keyBeside(stream, suffix);
  return `{${stream}}:${suffix}`;
}
