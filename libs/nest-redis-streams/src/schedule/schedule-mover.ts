import type { Logger } from '@nestjs/common';
import type { Cluster, Redis } from 'ioredis';
import { moveDue } from './schedule-store.js';
import { SCHEDULE_MESSAGES } from './schedule.messages.js';

/** How a ScheduleMover runs. */
export interface ScheduleMoverOptions {
  /** Longest wait between two looks at a schedule (an entry scheduled meanwhile is moved within it). */
  readonly checkMs: number;
  /** Entries moved per script call (1-1000): bounds how long one call holds Redis. */
  readonly batch: number;
  /** Whether every node offers XADD … IDMP (probed at listen). */
  readonly idmp: boolean;
}

/**
 * Moves the due entries of each served stream's schedule into the stream: a timer per stream that
 * wakes at the next due time (never later than `checkMs`, so entries scheduled meanwhile are seen).
 * All its state is in Redis, and the move script is atomic, so any number of instances may run
 * movers for one stream: each entry goes into the stream once, whoever moves it, even across
 * restarts and failovers.
 */
export class ScheduleMover {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly rounds = new Set<Promise<unknown>>();
  /** The last failure per stream, logged once: an outage or a missing ACL grant would otherwise log every round. */
  private readonly lastError = new Map<string, string>();
  private stopped = false;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly streams: readonly string[],
    private readonly options: ScheduleMoverOptions,
    private readonly logger: Pick<Logger, 'warn' | 'log'>,
  ) {
    if (!(Number.isInteger(options.batch) && options.batch >= 1 && options.batch <= 1_000)) {
      throw new RangeError(`ScheduleMover: batch must be a whole number from 1 to 1000, got ${String(options.batch)}.`);
    }
  }

  /** Starts a timer per stream; the first look is at once (entries that came due while nobody ran). */
  start(): void {
    for (const stream of new Set(this.streams)) this.wake(stream, 0);
  }

  /** Moves every due entry of `stream` now; resolves with how many were moved and the next due time. */
  async moveNow(stream: string): Promise<{ moved: number; nextDueAt: number | null }> {
    const { moved, nextDueAt } = await this.moveAll(stream);
    return { moved, nextDueAt };
  }

  /** Stops the timers; resolves once the rounds in flight finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.rounds);
  }

  private wake(stream: string, inMs: number): void {
    if (this.stopped) return;
    const timer = setTimeout(() => this.run(stream), Math.max(0, inMs));
    // A schedule alone must not keep a process alive that has nothing else to do.
    timer.unref();
    this.timers.set(stream, timer);
  }

  private run(stream: string): void {
    const round = this.moveAll(stream).then(
      ({ nextDueInMs }) => {
        this.lastError.delete(stream);
        // On Redis' clock: a mover whose own clock is ahead would otherwise wake again at once, and again.
        this.wake(stream, nextDueInMs === null ? this.options.checkMs : Math.min(this.options.checkMs, nextDueInMs));
      },
      (err: unknown) => {
        const message = (err as Error).message;
        if (this.lastError.get(stream) !== message) {
          this.logger.warn(SCHEDULE_MESSAGES.moveFailed(stream, message, this.options.checkMs));
        }
        this.lastError.set(stream, message);
        this.wake(stream, this.options.checkMs);
      },
    );
    this.rounds.add(round);
    void round.finally(() => this.rounds.delete(round));
  }

  /** Rounds until one looks at fewer members than a batch (none left due). */
  private async moveAll(stream: string): Promise<{ moved: number; nextDueAt: number | null; nextDueInMs: number | null }> {
    let moved = 0;
    for (;;) {
      const round = await moveDue(this.redis, stream, this.options.batch, this.options.idmp);
      moved += round.moved;
      if (round.setAside.length > 0) this.logger.warn(SCHEDULE_MESSAGES.setAside(stream, round.setAside));
      // A full batch may have left more due entries behind.
      if (round.looked < this.options.batch || this.stopped) return { ...round, moved };
    }
  }
}
