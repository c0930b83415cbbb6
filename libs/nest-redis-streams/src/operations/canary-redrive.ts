import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { DeadLetterService } from '../dead-letter/dead-letter.service.js';
import { canaryClaimKey, canaryRunKey } from '../keys/index.js';
import type { AuditIntent, AuditLog } from './audit-log.js';
import { auditedWrite } from './audited-write.js';
import { type CanaryClaim, claimCanary, releaseCanary } from './canary-claim.js';
import { type CanaryOptions, resolveCanaryOptions } from './canary-options.js';
import { CANARY_TIMING, type CanaryProgress, type CanaryTiming } from './canary-progress.js';
import { CanaryRun, recordEnd, saveProgress } from './canary-run.js';
import { CanaryRunningError } from './errors/canary-running.error.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import type { StreamSetting } from './overview.js';
import { previewRedrive } from './redrive-preview.js';
import { retryTransient } from './transient-retry.js';

export type { CanaryProgress, CanaryState } from './canary-progress.js';

const KEEP_CLAIM_S = 7 * 24 * 3_600;

export interface CanaryDeps {
  redis: Redis;
  deadLetters: DeadLetterService;
  audit: AuditLog;
  served(stream: string): Promise<StreamSetting>;
  scanLimit: number;
  /** Heartbeat, lease and retry windows; the defaults suit production (tests shorten them). */
  timing?: Partial<CanaryTiming>;
}

/**
 * Canary re-drive of one failure group: re-drive the first `canary` dead letters, wait for their
 * outcomes, and only if few enough failed again go on with the rest at `ratePerSec`, watching as it
 * goes; it stops by itself, saying why, once the share of re-driven entries that failed again
 * passes `maxFailureRatio`. Each re-drive and the start and end are audit records. The run's state
 * is a hash beside the audit stream, written at every step and every heartbeat, so any instance
 * (and the CLI) reads its progress.
 *
 * One run per stream and failure group at a time, fleet-wide (a claim with a lease in Redis): a
 * second start is refused with the live run's id. A run reads only the dead letters that existed
 * when it began, so what it re-drove and failed again is not re-driven again. A run whose process died shows
 * `aborted` once its lease lapsed; starting the same canary again then takes it over, reading up
 * to the same dead letter, and goes on where it stopped (what was re-driven left the stream).
 */
export class CanaryRedrives {
  private readonly timing: CanaryTiming;

  constructor(private readonly deps: CanaryDeps) {
    this.timing = { ...CANARY_TIMING, ...deps.timing };
  }

  /**
   * Checks the options and the stream, claims the pair (refused with `CanaryRunningError` while
   * another run is live), records the start, and runs the canary: `done` settles with the last
   * progress (a failure rejects it, after recording the end). `signal` ends the run early.
   */
  async start(
    actor: string,
    stream: string,
    options: CanaryOptions,
    onProgress: (p: CanaryProgress) => void = () => undefined,
    signal?: AbortSignal,
  ): Promise<{ runId: string; done: Promise<CanaryProgress> }> {
    const { redis, audit } = this.deps;
    const runId = randomUUID();
    const intent: AuditIntent = {
      ...{ actor, action: 'dlq.canary.start', stream, group: '', target: runId },
      params: JSON.stringify(options),
    };
    let claimKey = '';
    const started = auditedWrite(
      audit,
      intent,
      async () => {
        const opts = resolveCanaryOptions(options);
        const setting = await this.deps.served(stream);
        // Refuses a fingerprint with no records here (not found) before the run exists.
        const { scanLimit } = this.deps;
        await previewRedrive(this.deps.deadLetters, setting.deadLetterStream, { cause: opts.cause }, { scanLimit });
        const key = canaryClaimKey(audit.stream, stream, opts.cause);
        const claim = await this.claim(key, runId, setting.deadLetterStream);
        if (claim.live !== null) {
          throw new CanaryRunningError(
            OPERATIONS_MESSAGES.canaryRunning(stream, opts.cause, claim.live, claim.leaseLeftMs),
            claim.live,
          );
        }
        claimKey = key;
        return { setting, opts, claim };
      },
      async ({ setting, opts, claim }) => {
        const now = Date.now();
        const progress: CanaryProgress = {
          ...{ runId, stream, cause: opts.cause, actor, state: 'running', phase: 'canary', reason: '' },
          ...{ redriven: 0, succeeded: 0, failedAgain: 0, watching: 0, startedAt: now, updatedAt: now, options: opts },
          ...{ upTo: claim.upTo, resumes: claim.resumes },
        };
        await saveProgress(redis, audit.stream, progress);
        return { setting, progress };
      },
    );
    // Claimed but not started (the audit refused the intent): the next start takes over at once.
    const { setting, progress } = await started.catch(async (err: unknown) => {
      if (claimKey) await releaseCanary(redis, claimKey, runId, false).catch(() => undefined);
      throw err;
    });
    const run = new CanaryRun(
      { ...this.deps, timing: this.timing },
      progress,
      setting.deadLetterStream,
      claimKey,
      onProgress,
      signal,
    );
    const done = run.run(() => this.endTakenOver(progress));
    return { runId, done };
  }

  /** A run's progress, from Redis; a running one without a recent heartbeat is reported aborted. */
  async progress(runId: string): Promise<CanaryProgress> {
    const raw = await this.deps.redis.hget(canaryRunKey(this.deps.audit.stream, runId), 'progress');
    if (raw === null) throw new OperationError('not-found', OPERATIONS_MESSAGES.noCanaryRun(runId));
    const progress = JSON.parse(raw) as CanaryProgress;
    if (progress.state === 'running' && Date.now() - progress.updatedAt > this.timing.leaseMs) {
      progress.state = 'aborted';
      progress.reason = OPERATIONS_MESSAGES.canaryAborted(progress.updatedAt, this.timing.leaseMs);
    }
    return progress;
  }

  private async claim(key: string, runId: string, dlq: string): Promise<CanaryClaim> {
    const newest = await this.deps.deadLetters.lastId(dlq);
    return claimCanary(this.deps.redis, key, runId, { leaseMs: this.timing.leaseMs, newest, keepSeconds: KEEP_CLAIM_S });
  }

  /**
   * The run this one took over never recorded its end (its process stopped, or it could not reach
   * Redis): its progress reads aborted from now on, and its end goes to the audit for it.
   */
  private async endTakenOver(p: CanaryProgress): Promise<void> {
    if (p.resumes === null) return;
    const { redis, audit } = this.deps;
    const retry = <R>(step: () => Promise<R>) =>
      retryTransient(redis, { forMs: this.timing.retryForMs, firstDelayMs: 50, maxDelayMs: 2_000 }, step);
    const raw = await retry(() => redis.hget(canaryRunKey(audit.stream, p.resumes!), 'progress'));
    const old = raw === null ? null : (JSON.parse(raw) as CanaryProgress);
    if (old?.state !== 'running') return;
    Object.assign(old, { state: 'aborted', reason: OPERATIONS_MESSAGES.canaryTakenOver(p.runId, old.updatedAt) });
    await retry(() => saveProgress(redis, audit.stream, old));
    await recordEnd(audit, old, retry);
  }
}
