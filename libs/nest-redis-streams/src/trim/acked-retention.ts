import type { Redis } from 'ioredis';
import { readGroupBacklogs, safeFloor } from './group-backlog.js';

/** How one run of the acked retention went. */
export interface AckedTrimResult {
  stream: string;
  /** Entries removed. */
  removed: number;
  /**
   * `acked`: `XTRIM … ACKED` (Redis 8.2+) removed every entry each group acknowledged, wherever it
   * lies; `floor`: entries older than the oldest one a group still needs were removed (entries
   * acked out of order above it stay until the floor passes them); `no-groups`: nothing to do.
   */
  method: 'acked' | 'floor' | 'no-groups';
}

/**
 * Retention by acknowledgement: removes what every consumer group has acknowledged, nothing a
 * group still needs (pending or not yet delivered), so the stream stays small and the trim audit
 * has nothing to report. A stream without groups is left alone: nobody has acknowledged anything,
 * and a group created later would find it empty.
 *
 * With `trimConditions` (XTRIM's KEEPREF/DELREF/ACKED, Redis 8.2+): `XTRIM <stream> MAXLEN = 0 ACKED`,
 * exact, which Redis checks entry by entry against every group's PEL and last-delivered id (the
 * approximate `~` form deleted unacknowledged entries before 8.2.7/8.4.4/8.6). Elsewhere the
 * groups' floor (oldest pending entry or first undelivered one) is read and `XTRIM MINID =` to it
 * removes everything older. A floor only moves forward (acks, new deliveries; new entries land
 * above it), so reading it first is safe; only an `XGROUP SETID` back in time in between is not.
 */
export async function trimAcked(redis: Redis, stream: string, trimConditions: boolean): Promise<AckedTrimResult> {
  const groups = await readGroupBacklogs(redis, stream);
  if (groups.length === 0) return { stream, removed: 0, method: 'no-groups' };
  if (trimConditions) {
    const removed = Number(await redis.call('XTRIM', stream, 'MAXLEN', '=', 0, 'ACKED'));
    return { stream, removed, method: 'acked' };
  }
  // With groups there is always a floor: at the latest, the entry after the last one delivered.
  const removed = await redis.xtrim(stream, 'MINID', '=', safeFloor(groups)!);
  return { stream, removed, method: 'floor' };
}
