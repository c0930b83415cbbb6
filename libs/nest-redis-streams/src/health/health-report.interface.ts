import type { StreamHealthStatus } from './stream-health.js';
import type { StreamStats } from './stream-stats.js';

/** What readiness reports for one stream/group; the figures are missing when they could not be read. */
export interface StreamHealthReport extends Partial<Omit<StreamStats, 'stream' | 'group'>> {
  /** Stream key. */
  stream: string;
  /** Consumer group. */
  group: string;
  /** `down` fails the check, `degraded` passes it with Terminus status "degraded". */
  status: StreamHealthStatus;
  /** Milliseconds since this instance's read loop of the stream/group last completed a read. */
  readLoopAgeMs: number;
  /**
   * How long this instance's longest-running handler of the stream/group has been running (0
   * when none runs). Lease renewal keeps a running entry's idle time near 0, so a hung handler
   * shows here, not in `oldestIdleMs`.
   */
  oldestRunningMs: number;
  /** Why the status is not `up`: each threshold exceeded, with the figure and the limit. */
  reason?: string;
}

/** What liveness reports for one read loop of this instance. */
export interface ReadLoopReport {
  /** Stream key. */
  stream: string;
  /** Consumer group. */
  group: string;
  /** This instance's consumer name. */
  consumer: string;
  /** Milliseconds since the loop last completed a read (an empty blocking read counts). */
  lastReadAgeMs: number;
  /** Entries this consumer holds: running, waiting for a slot or being acked. */
  held: number;
  /** How long the longest-running handler of this loop has been running (0 when none runs). */
  longestHandlerMs: number;
}
