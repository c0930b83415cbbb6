import { Logger } from '@nestjs/common';
import type { StreamRetention } from './retention-options.interface.js';
import type { StreamTrimmer } from './stream-trimmer.service.js';
import { RETENTION_DEFAULTS } from './trim.constants.js';
import { TRIM_MESSAGES } from './trim.messages.js';

interface Watched {
  retention: StreamRetention;
  timer: NodeJS.Timeout;
  running: Promise<void> | null;
}

/**
 * Periodic work for the streams a client writes to: a safe trim for `safe: true` retention, and
 * for a plain `maxLen` the backlog check that warns before MAXLEN deletes unprocessed entries.
 */
export class RetentionScheduler {
  private readonly logger = new Logger(RetentionScheduler.name);
  private readonly watched = new Map<string, Watched>();

  constructor(private readonly trimmer: StreamTrimmer) {}

  /** Starts the periodic work of `stream` the first time it is written; later calls are no-ops. */
  watch(stream: string, retention: StreamRetention | undefined): void {
    if (!retention || this.watched.has(stream)) return;
    if (!retention.safe && !retention.acked && retention.maxLen === undefined) return;
    const intervalMs = retention.intervalMs ?? RETENTION_DEFAULTS.intervalMs;
    const timer = setInterval(() => void this.runGuarded(stream), intervalMs);
    // Retention must not keep a process alive that has nothing else to do.
    timer.unref();
    this.watched.set(stream, { retention, timer, running: null });
    // A backlog that is already too large is worth a warning now, not one interval later.
    if (!retention.safe && !retention.acked) void this.runGuarded(stream);
  }

  /** Runs every watched stream's work now (waits for runs already going). */
  async runNow(): Promise<void> {
    await Promise.all([...this.watched.keys()].map((stream) => this.runGuarded(stream)));
  }

  /** Stops every timer and waits for runs in progress. */
  async stop(): Promise<void> {
    const running = [...this.watched.values()].map((w) => {
      clearInterval(w.timer);
      return w.running ?? Promise.resolve();
    });
    this.watched.clear();
    await Promise.all(running);
  }

  /** One run per stream at a time: a slow trim is not stacked by the next tick. */
  private runGuarded(stream: string): Promise<void> {
    const watched = this.watched.get(stream);
    if (!watched) return Promise.resolve();
    watched.running ??= this.run(stream, watched.retention).finally(() => (watched.running = null));
    return watched.running;
  }

  private async run(stream: string, retention: StreamRetention): Promise<void> {
    try {
      if (retention.acked) await this.trimmer.trimAcked(stream);
      else if (retention.safe) await this.trimmer.trim(stream, retention);
      else await this.trimmer.checkMaxLen(stream, retention.maxLen!);
    } catch (err) {
      const cause = (err as Error).message;
      this.logger.warn(
        retention.safe || retention.acked
          ? TRIM_MESSAGES.trimFailed(stream, cause)
          : TRIM_MESSAGES.backlogCheckFailed(stream, cause),
      );
    }
  }
}
