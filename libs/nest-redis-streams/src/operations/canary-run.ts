import type { Redis } from 'ioredis';
import type { DeadLetterService } from '../dead-letter/dead-letter.service.js';
import { canaryRunKey } from '../keys/index.js';
import type { AuditIntent, AuditLog } from './audit-log.js';
import { releaseCanary, renewCanary } from './canary-claim.js';
import type { CanaryProgress, CanaryTiming } from './canary-progress.js';
import { isTombstone, matches } from './dead-letters.js';
import { RedriveOutcomes } from './redrive-outcome.js';
import { pause, retryTransient } from './transient-retry.js';

/** What a run needs: Redis, the dead letters, the audit, its limits. */
export interface CanaryRunDeps {
  redis: Redis;
  deadLetters: DeadLetterService;
  audit: AuditLog;
  scanLimit: number;
  timing: CanaryTiming;
}

const RUN_TTL_S = 7 * 24 * 3_600;
/** How often outcomes are polled while nothing is due. */
const POLL_MS = 100;
const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Writes a run's progress where every instance and the CLI read it. */
export async function saveProgress(redis: Redis, auditStream: string, p: CanaryProgress): Promise<void> {
  const key = canaryRunKey(auditStream, p.runId);
  await redis.multi().hset(key, 'progress', JSON.stringify(p)).expire(key, RUN_TTL_S).exec();
}

/**
 * Records a step of a run in the audit, intent then outcome, each tried again while Redis refuses
 * it (`retry`), so that a full Redis delays a run instead of ending it unrecorded.
 */
export async function auditStep<T>(
  audit: AuditLog,
  intent: AuditIntent,
  retry: <R>(step: () => Promise<R>) => Promise<R>,
  run: () => Promise<T>,
): Promise<T> {
  const begun = await retry(() => audit.begin(intent));
  let result: T;
  try {
    result = await retry(run);
  } catch (err) {
    await retry(() => audit.finish(begun, intent, false, messageOf(err)));
    throw err;
  }
  await retry(() => audit.finish(begun, intent, true, JSON.stringify(result)));
  return result;
}

/**
 * One canary run's loop (see `CanaryRedrives`): reads the failure group's dead letters oldest first
 * up to the run's bound, re-drives the canaries, then the rest at the rate, polls outcomes, and
 * renews its lease and writes its progress every heartbeat, also while it waits for the next
 * re-drive. Redis refusals (OOM, LOADING, a lost connection) are waited out with a back-off; a run
 * that cannot go on ends `failed` with the reason, and every end is recorded in the audit.
 */
export class CanaryRun {
  private readonly queue: Array<{ id: string; group: string }> = [];
  private after: string | undefined;
  private scanned = 0;
  private exhausted = false;
  private lastBeat = 0;
  private nextAt = 0;
  /** Set when another run took the pair over: its taker recorded this run's end. */
  private takenOverBy: string | null = null;
  private readonly outcomes: RedriveOutcomes;

  constructor(
    private readonly deps: CanaryRunDeps,
    private readonly p: CanaryProgress,
    private readonly dlq: string,
    private readonly claimKey: string,
    private readonly onProgress: (p: CanaryProgress) => void,
    private readonly signal?: AbortSignal,
  ) {
    this.outcomes = new RedriveOutcomes(deps.redis, p.stream, dlq, p.startedAt);
  }

  /**
   * Runs `first` (the end of the run it took over), then to the end; resolves with the last
   * progress, rejects (after recording the end) when Redis failed it.
   */
  async run(first: () => Promise<void> = async () => undefined): Promise<CanaryProgress> {
    let failure: unknown = null;
    try {
      await first();
      await this.loop();
    } catch (err) {
      failure = err;
      Object.assign(this.p, { state: 'failed', reason: `Failed: ${messageOf(err)} Run the same canary again to go on.` });
    }
    // A failure of the end itself (Redis refused it for endRetryForMs) must not hide the run's own.
    const unrecorded = await this.end().then(
      () => null,
      (err: unknown) => err,
    );
    if (failure !== null) throw failure;
    if (unrecorded !== null) throw unrecorded;
    return { ...this.p };
  }

  private retry<R>(step: () => Promise<R>, forMs = this.deps.timing.retryForMs): Promise<R> {
    const policy = { forMs, firstDelayMs: 50, maxDelayMs: 2_000, signal: this.signal };
    return retryTransient(this.deps.redis, policy, step);
  }

  private async loop(): Promise<void> {
    const { p } = this;
    const o = p.options;
    while (p.state === 'running') {
      if (this.signal?.aborted) {
        Object.assign(p, {
          state: 'stopped',
          reason: `Stopped by its caller before the end (${messageOf(this.signal.reason)}).`,
        });
        break;
      }
      const inCanary = p.phase === 'canary';
      const head = inCanary && p.redriven >= o.canary ? null : await this.retry(() => this.peek());
      // After the canaries, the next record waits for its turn at the rate; the run keeps polling
      // and beating meanwhile, so a slow rate never reads as a dead process.
      const due = head !== null && (inCanary || Date.now() >= this.nextAt);
      if (due) {
        this.queue.shift();
        const newId = await this.redriveOne(head.id);
        if (newId) {
          p.redriven += 1;
          this.outcomes.watch({ deadLetterId: head.id, newId, group: head.group, redrivenAt: Date.now() });
        }
        if (!inCanary) this.nextAt = Date.now() + 1_000 / o.ratePerSec;
      } else {
        await pause(head ? Math.min(POLL_MS, Math.max(0, this.nextAt - Date.now())) : POLL_MS, this.signal);
      }
      await this.settle();
      this.decide(inCanary);
      if (p.state !== 'running' || due || Date.now() - this.lastBeat >= this.deps.timing.heartbeatMs) await this.beat();
    }
    if (p.redriven === 0 && this.exhausted && p.state === 'done') {
      p.reason = `No dead letters of failure group ${o.cause} to re-drive (up to ${p.upTo ?? 'none'}).`;
    }
  }

  private async settle(): Promise<void> {
    for (const d of await this.retry(() => this.outcomes.poll(this.p.options.settleMs))) {
      if (d.outcome === 'acked') this.p.succeeded += 1;
      else this.p.failedAgain += 1;
    }
  }

  // Among the canaries the share is of all of them, so one early failure does not stop a run the
  // others would carry; after them, of every re-driven entry whose outcome is known.
  private decide(inCanary: boolean): void {
    const { p } = this;
    const o = p.options;
    const planned = this.exhausted ? p.redriven : o.canary;
    const base = p.phase === 'canary' ? planned : p.succeeded + p.failedAgain;
    if (p.failedAgain > 0 && p.failedAgain / Math.max(1, base) > o.maxFailureRatio) {
      Object.assign(p, { state: 'stopped', reason: thresholdReason(p, planned) });
    } else if (inCanary && (p.redriven >= o.canary || this.exhausted) && this.outcomes.outstanding === 0) {
      // The pace counts from the canaries' verdict, as if they were the last re-drive.
      p.phase = 'rate';
      this.nextAt = Date.now() + 1_000 / o.ratePerSec;
    } else if (!inCanary && this.exhausted && this.outcomes.outstanding === 0) {
      Object.assign(p, {
        state: 'done',
        reason: `All ${p.redriven} re-driven; ${p.succeeded} succeeded, ${p.failedAgain} failed again.`,
      });
    }
  }

  /**
   * The oldest record still to re-drive, read a page at a time up to the run's bound: the records
   * its own re-drives park again are newer, so they are never read as further records. Records
   * without a group (re-driven to every group before) cannot be watched in one group: a plain
   * re-drive is left to take them.
   */
  private async peek(): Promise<{ id: string; group: string } | null> {
    const { p } = this;
    while (this.queue.length === 0 && !this.exhausted && p.upTo !== null && this.scanned < this.deps.scanLimit) {
      const count = Math.min(100, this.deps.scanLimit - this.scanned);
      const page = await this.deps.deadLetters.list(this.dlq, { after: this.after, count, upTo: p.upTo });
      this.scanned += page.items.length;
      this.after = page.items.at(-1)?.id ?? this.after;
      for (const letter of page.items)
        if (matches(letter, { cause: p.cause }) && !isTombstone(letter) && letter.group)
          this.queue.push({ id: letter.id, group: letter.group });
      if (page.next === null) break;
    }
    if (this.queue.length === 0) this.exhausted = true;
    return this.queue[0] ?? null;
  }

  /** Renews the lease (or learns that another run took over) and writes the progress. */
  private async beat(): Promise<void> {
    const { redis, timing } = this.deps;
    this.lastBeat = Date.now();
    if (this.p.state === 'running') {
      const holder = await this.retry(() => renewCanary(redis, this.claimKey, this.p.runId, timing.leaseMs));
      if (holder !== null) {
        this.takenOverBy = holder;
        Object.assign(this.p, {
          state: 'aborted',
          reason: `Aborted: Redis did not hear from this run for longer than its lease, and run ${holder || '(none)'} took over.`,
        });
        return;
      }
    }
    await this.report();
  }

  private async report(forMs?: number): Promise<void> {
    this.p.watching = this.outcomes.outstanding;
    this.p.updatedAt = Date.now();
    await this.retry(() => saveProgress(this.deps.redis, this.deps.audit.stream, this.p), forMs);
    this.onProgress({ ...this.p });
  }

  private redriveOne(id: string): Promise<string | null> {
    const { p } = this;
    const intent: AuditIntent = {
      ...{ actor: p.actor, action: 'dlq.canary.redrive', stream: p.stream, group: '', target: id },
      params: JSON.stringify({ runId: p.runId }),
    };
    return auditStep(
      this.deps.audit,
      intent,
      (step) => this.retry(step),
      () => this.deps.deadLetters.redrive(this.dlq, id),
    );
  }

  /**
   * The end, tried for `endRetryForMs` while Redis refuses it: the audit record with the reason and
   * counts, the last progress, and the claim (freed after a decision; otherwise its bound waits for
   * the run that takes over). A run taken over only writes its progress: its taker recorded its end.
   */
  private async end(): Promise<void> {
    const { p } = this;
    const { audit, redis, timing } = this.deps;
    const forMs = timing.endRetryForMs;
    const retry = <R>(step: () => Promise<R>) => retryTransient(redis, { forMs, firstDelayMs: 50, maxDelayMs: 5_000 }, step);
    if (this.takenOverBy === null) {
      await recordEnd(audit, p, retry);
      const decided = p.state === 'done' || (p.state === 'stopped' && !this.signal?.aborted);
      await retry(() => releaseCanary(redis, this.claimKey, p.runId, decided));
    }
    p.watching = this.outcomes.outstanding;
    p.updatedAt = Date.now();
    await retry(() => saveProgress(redis, audit.stream, p));
    this.onProgress({ ...p });
  }
}

/** The end of a run in the audit: `dlq.canary.<state>` with its reason and counts. */
export async function recordEnd(
  audit: AuditLog,
  p: CanaryProgress,
  retry: <R>(step: () => Promise<R>) => Promise<R>,
): Promise<void> {
  const intent: AuditIntent = {
    ...{ actor: p.actor, action: `dlq.canary.${p.state}`, stream: p.stream, group: '', target: p.runId },
    params: JSON.stringify(p.options),
  };
  const counts = { reason: p.reason, redriven: p.redriven, succeeded: p.succeeded, failedAgain: p.failedAgain };
  await auditStep(audit, intent, retry, async () => counts);
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
