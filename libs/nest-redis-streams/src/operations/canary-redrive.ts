import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { DeadLetterService } from '../dead-letter/dead-letter.service.js';
import { canaryRunKey } from '../keys/index.js';
import type { AuditIntent, AuditLog } from './audit-log.js';
import { auditedWrite } from './audited-write.js';
import { type CanaryOptions, type ResolvedCanaryOptions, resolveCanaryOptions } from './canary-options.js';
import { isTombstone, matches } from './dead-letters.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';
import type { StreamSetting } from './overview.js';
import { RedriveOutcomes } from './redrive-outcome.js';
import { previewRedrive } from './redrive-preview.js';

/** Where a canary run stands. `aborted`: its process stopped while running (no heartbeat). */
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
}

/** A run whose heartbeat is older than this was left by a process that stopped: it is shown aborted. */
const HEARTBEAT_MS = 1_000;
const ABORTED_AFTER_MS = 15_000;
const RUN_TTL_S = 7 * 24 * 3_600;

export interface CanaryDeps {
  redis: Redis;
  deadLetters: DeadLetterService;
  audit: AuditLog;
  served(stream: string): Promise<StreamSetting>;
  scanLimit: number;
}

/**
 * Canary re-drive of one failure group: re-drive the first `canary` dead letters, wait for their
 * outcomes, and only if few enough failed again go on with the rest at `ratePerSec`, watching as it
 * goes; it stops by itself, saying why, once the share of re-driven entries that failed again
 * passes `maxFailureRatio`. Each re-drive and the start and end are audit records. The run's state
 * is a hash beside the audit stream, written at every step, so any instance (and the CLI) reads
 * its progress; a run whose process died shows `aborted`. Running the same canary again resumes
 * it: what was re-driven left the dead-letter stream, so nothing is re-driven twice.
 */
export class CanaryRedrives {
  constructor(private readonly deps: CanaryDeps) {}

  /**
   * Checks the options and the stream, records the start, and runs the canary: `done` settles with
   * the last progress (Redis failures reject it, after marking the run failed when Redis lets it).
   */
  async start(
    actor: string,
    stream: string,
    options: CanaryOptions,
    onProgress: (p: CanaryProgress) => void = () => undefined,
  ): Promise<{ runId: string; done: Promise<CanaryProgress> }> {
    const runId = randomUUID();
    const intent: AuditIntent = {
      actor,
      action: 'dlq.canary.start',
      stream,
      group: '',
      target: runId,
      params: JSON.stringify(options),
    };
    const { setting, progress } = await auditedWrite(
      this.deps.audit,
      intent,
      async () => {
        const opts = resolveCanaryOptions(options);
        const setting = await this.deps.served(stream);
        // Refuses a fingerprint with no records here (not found) before the run exists.
        await previewRedrive(
          this.deps.deadLetters,
          setting.deadLetterStream,
          { cause: opts.cause },
          { scanLimit: this.deps.scanLimit },
        );
        return { setting, opts };
      },
      async ({ setting, opts }) => {
        const now = Date.now();
        const progress: CanaryProgress = {
          ...{ runId, stream, cause: opts.cause, actor, state: 'running', phase: 'canary', reason: '' },
          ...{ redriven: 0, succeeded: 0, failedAgain: 0, watching: 0, startedAt: now, updatedAt: now, options: opts },
        };
        await this.save(progress);
        return { setting, progress };
      },
    );
    const done = this.run(progress, setting.deadLetterStream, onProgress).catch(async (err: unknown) => {
      progress.state = 'failed';
      progress.reason = err instanceof Error ? err.message : String(err);
      await this.save(progress).catch(() => undefined);
      throw err;
    });
    return { runId, done };
  }

  /** A run's progress, from Redis; a running one without a recent heartbeat is reported aborted. */
  async progress(runId: string): Promise<CanaryProgress> {
    const raw = await this.deps.redis.hget(canaryRunKey(this.deps.audit.stream, runId), 'progress');
    if (raw === null) throw new OperationError('not-found', OPERATIONS_MESSAGES.noCanaryRun(runId));
    const progress = JSON.parse(raw) as CanaryProgress;
    if (progress.state === 'running' && Date.now() - progress.updatedAt > ABORTED_AFTER_MS) {
      progress.state = 'aborted';
      progress.reason =
        `No heartbeat since ${new Date(progress.updatedAt).toISOString()}: the process running it stopped. ` +
        'Run the same canary again to go on (what was re-driven already left the dead-letter stream).';
    }
    return progress;
  }

  private async run(p: CanaryProgress, dlq: string, onProgress: (p: CanaryProgress) => void): Promise<CanaryProgress> {
    const o = p.options;
    const outcomes = new RedriveOutcomes(this.deps.redis, p.stream, dlq, p.startedAt);
    const report = async () => {
      p.watching = outcomes.outstanding;
      p.updatedAt = Date.now();
      await this.save(p);
      onProgress({ ...p });
    };
    const settle = async () => {
      for (const d of await outcomes.poll(o.settleMs)) {
        if (d.outcome === 'acked') p.succeeded += 1;
        else p.failedAgain += 1;
      }
    };
    // Among the canaries the share is of all of them, so one early failure does not stop a run the
    // others would carry; after them, of every re-driven entry whose outcome is known.
    const tooManyFailed = () => {
      const planned = exhausted ? p.redriven : o.canary;
      const base = p.phase === 'canary' ? planned : p.succeeded + p.failedAgain;
      return p.failedAgain > 0 && p.failedAgain / Math.max(1, base) > o.maxFailureRatio;
    };
    const stop = (why: string) => Object.assign(p, { state: 'stopped' as const, reason: why });

    let after: string | undefined;
    let scanned = 0;
    let exhausted = false;
    let lastBeat = 0;
    const queue: Array<{ id: string; group: string }> = [];
    // Oldest first, a page at a time; records without a group (re-driven to every group before)
    // cannot be watched in one group, so a plain re-drive is left to take them.
    const next = async (): Promise<{ id: string; group: string } | null> => {
      while (queue.length === 0 && !exhausted && scanned < this.deps.scanLimit) {
        const page = await this.deps.deadLetters.list(dlq, { after, count: Math.min(100, this.deps.scanLimit - scanned) });
        scanned += page.items.length;
        after = page.items.at(-1)?.id ?? after;
        for (const letter of page.items)
          if (matches(letter, { cause: o.cause }) && !isTombstone(letter) && letter.group)
            queue.push({ id: letter.id, group: letter.group });
        if (page.next === null) break;
      }
      if (queue.length === 0) exhausted = true;
      return queue.shift() ?? null;
    };

    while (p.state === 'running') {
      const inCanary = p.phase === 'canary';
      const candidate = inCanary && p.redriven >= o.canary ? null : await next();
      if (candidate) {
        const newId = await this.redriveOne(p, dlq, candidate.id);
        if (newId) {
          p.redriven += 1;
          outcomes.watch({ deadLetterId: candidate.id, newId, group: candidate.group, redrivenAt: Date.now() });
        }
        if (!inCanary) await sleep(1_000 / o.ratePerSec);
      } else {
        // Nothing to re-drive now: wait for the outcomes (of the canaries, or of the last ones).
        await sleep(100);
      }
      await settle();
      if (tooManyFailed()) stop(thresholdReason(p, exhausted ? p.redriven : o.canary));
      else if (inCanary && (p.redriven >= o.canary || exhausted) && outcomes.outstanding === 0) {
        p.phase = 'rate';
      } else if (!inCanary && exhausted && outcomes.outstanding === 0) {
        Object.assign(p, {
          state: 'done',
          reason: `All ${p.redriven} re-driven; ${p.succeeded} succeeded, ${p.failedAgain} failed again.`,
        });
      }
      if (p.state !== 'running' || Date.now() - lastBeat >= HEARTBEAT_MS || candidate) {
        lastBeat = Date.now();
        await report();
      }
    }
    if (p.redriven === 0 && exhausted) p.reason = `No dead letters of failure group ${o.cause} to re-drive.`;
    await this.recordEnd(p);
    await report();
    return { ...p };
  }

  private redriveOne(p: CanaryProgress, dlq: string, id: string): Promise<string | null> {
    const intent: AuditIntent = {
      actor: p.actor,
      action: 'dlq.canary.redrive',
      stream: p.stream,
      group: '',
      target: id,
      params: JSON.stringify({ runId: p.runId }),
    };
    return auditedWrite(
      this.deps.audit,
      intent,
      async () => undefined,
      () => this.deps.deadLetters.redrive(dlq, id),
    );
  }

  private async recordEnd(p: CanaryProgress): Promise<void> {
    const intent: AuditIntent = {
      actor: p.actor,
      action: `dlq.canary.${p.state}`,
      stream: p.stream,
      group: '',
      target: p.runId,
      params: JSON.stringify(p.options),
    };
    await auditedWrite(
      this.deps.audit,
      intent,
      async () => undefined,
      async () => ({ reason: p.reason, redriven: p.redriven, succeeded: p.succeeded, failedAgain: p.failedAgain }),
    );
  }

  private async save(p: CanaryProgress): Promise<void> {
    const key = canaryRunKey(this.deps.audit.stream, p.runId);
    await this.deps.redis.multi().hset(key, 'progress', JSON.stringify(p)).expire(key, RUN_TTL_S).exec();
  }
}

function thresholdReason(p: CanaryProgress, planned: number): string {
  const known = p.succeeded + p.failedAgain;
  const ratio = (p.failedAgain / (p.phase === 'canary' ? Math.max(planned, 1) : known)).toFixed(2);
  const where = p.phase === 'canary' ? `of the ${planned} canaries` : `of the ${known} re-driven entries with a known outcome`;
  return (
    `Stopped: ${p.failedAgain} ${where} failed again (parked again, or not acknowledged within ${p.options.settleMs} ms): ` +
    `${ratio} > maxFailureRatio ${p.options.maxFailureRatio}. The rest stay in the dead-letter stream; fix the cause first.`
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
