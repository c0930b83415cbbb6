import type { ResolvedCanaryOptions } from './canary-options.js';

/**
 * Where a canary run stands. `aborted`: its process stopped while running (no heartbeat), or
 * another run took over after its lease lapsed.
 */
export type CanaryState = 'running' | 'done' | 'stopped' | 'failed' | 'aborted';

export interface CanaryProgress {
  runId: string;
  stream: string;
  cause: string;
  actor: string;
  state: CanaryState;
  /** `canary` while the first N are watched, `rate` after they passed. */
  phase: 'canary' | 'rate';
  /** Why it ended (done, stopped by the threshold, failed, aborted); '' while running. */
  reason: string;
  redriven: number;
  succeeded: number;
  failedAgain: number;
  /** Re-driven entries whose outcome is not known yet. */
  watching: number;
  startedAt: number;
  updatedAt: number;
  options: ResolvedCanaryOptions;
  /**
   * The newest dead letter when the run began (or when the run it took over began): it re-drives
   * nothing newer, so an entry it re-drove that fails again is not read as a further record. Null:
   * there was none.
   */
  upTo: string | null;
  /** The run whose process stopped before it ended and that this run took over; null for a fresh run. */
  resumes: string | null;
}

/** How often a run proves it is alive, and how long Redis may refuse it before it gives up. */
export interface CanaryTiming {
  /** The run renews its lease and writes its progress this often, also while it waits. */
  heartbeatMs: number;
  /** A run without a heartbeat for this long reads as aborted, and another run may take it over. */
  leaseMs: number;
  /** A step Redis keeps refusing (OOM, LOADING, connection lost) is tried again for this long. */
  retryForMs: number;
  /** The end record (audit, progress, lease) is tried again for this long: every run that began ends in the audit. */
  endRetryForMs: number;
}

export const CANARY_TIMING: CanaryTiming = { heartbeatMs: 1_000, leaseMs: 15_000, retryForMs: 60_000, endRetryForMs: 600_000 };
