import type { Logger } from '@nestjs/common';
import type { SchedulerRegistry } from '@nestjs/schedule';
import type { TransportEvents } from '../events/transport-events.js';
import { LeaseKeeper } from '../recovery/lease-keeper.js';
import { Reclaimer } from '../recovery/reclaimer.js';
import { removeIdleConsumers } from '../recovery/idle-consumers.js';
import { beatTtlMs } from '../recovery/consumer-beats.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { ScheduleMover } from '../schedule/index.js';
import type { ResolvedServerOptions } from './resolve-options.js';
import type { ConsumerEngine } from '../consumer/index.js';

/** Fastest lease renewal period: renewing more often buys nothing and costs round trips. */
const MIN_LEASE_PERIOD_MS = 50;

/** A periodic task that never overlaps itself and can be awaited when it is stopped. */
class PeriodicTask {
  private handle: NodeJS.Timeout;
  private round: Promise<unknown> | null = null;

  constructor(
    periodMs: number,
    private readonly task: () => Promise<unknown>,
  ) {
    this.handle = setInterval(() => this.tick(), periodMs);
  }

  get timer(): NodeJS.Timeout {
    return this.handle;
  }

  /** Stops the timer and resolves once a round that is running has finished. */
  async stop(): Promise<void> {
    clearInterval(this.handle);
    await this.round;
  }

  private tick(): void {
    if (this.round) return;
    // Each task catches its own errors; nothing here would report them.
    this.round = this.task().finally(() => (this.round = null));
  }
}

/**
 * Runs the periodic recovery work of each consumer. Reclaim (XAUTOCLAIM) and idle-consumer
 * housekeeping are registered in @nestjs/schedule's SchedulerRegistry (periods come from runtime
 * options, so static @Interval decorators cannot be used). Lease renewal is not: it belongs to
 * running handlers, and ScheduleModule clears every registered interval before Nest closes its
 * microservices, which would stop the leases while handlers still run.
 */
export class ConsumerScheduler {
  private readonly registered: Array<{ name: string; task: PeriodicTask }> = [];
  private readonly leases: PeriodicTask[] = [];

  constructor(
    private readonly registry: SchedulerRegistry,
    private readonly options: ResolvedServerOptions,
    private readonly redis: ScriptedRedis,
    private readonly events: TransportEvents,
    private readonly logger: Logger,
  ) {}

  /** Reclaimers of the given consumers, for a manual round (`server.reclaimNow()`, tests). */
  readonly reclaimers = new Map<ConsumerEngine, Reclaimer>();

  /** Moves the due entries of the served streams' schedules (null when `scheduleCheckMs` is 0). */
  mover: ScheduleMover | null = null;

  /** `idmp`: whether every node offers XADD … IDMP, which the mover then uses for scheduled event ids. */
  schedule(consumers: ConsumerEngine[], idmp = false): void {
    if (this.options.scheduleCheckMs > 0) {
      const streams = consumers.map((consumer) => consumer.stream);
      this.mover = new ScheduleMover(
        this.redis,
        streams,
        { checkMs: this.options.scheduleCheckMs, batch: 100, idmp },
        this.logger,
      );
      this.mover.start();
    }
    for (const consumer of consumers) {
      const id = `${consumer.stream}:${consumer.group}:${consumer.consumer}`;
      const beatMs = beatTtlMs(this.options.reclaimIntervalMs);
      const reclaimer = new Reclaimer(consumer, this.redis, this.options.reclaimCount, this.events, this.logger, beatMs);
      this.reclaimers.set(consumer, reclaimer);
      void reclaimer.beat();
      if (this.options.reclaimIntervalMs > 0) {
        this.register(`nrs:reclaim:${id}`, this.options.reclaimIntervalMs, () => reclaimer.run());
      }
      if (this.options.leaseRenewal) {
        const lease = new LeaseKeeper(consumer, this.redis, this.events, this.logger);
        const period = Math.max(MIN_LEASE_PERIOD_MS, Math.floor(consumer.subscription.options.minIdleTimeMs / 3));
        this.leases.push(new PeriodicTask(period, () => lease.renew()));
      }
      if (this.options.removeIdleConsumersAfterMs > 0) {
        const after = this.options.removeIdleConsumersAfterMs;
        this.register(`nrs:housekeeping:${id}`, Math.max(1_000, Math.floor(after / 2)), () =>
          removeIdleConsumers(this.redis, consumer.stream, consumer.group, after, this.logger, consumer.consumer),
        );
      }
    }
  }

  /**
   * First step of a shutdown: no new reclaim or housekeeping round starts, and the rounds in
   * flight (including manual `reclaimNow()` rounds) are awaited. Leases go on.
   */
  async stopReclaiming(): Promise<void> {
    await this.mover?.stop();
    for (const { name } of this.registered) {
      // The registry may have cleared them already (ScheduleModule does before shutdown).
      if (this.registry.doesExist('interval', name)) this.registry.deleteInterval(name);
    }
    await Promise.all([...this.registered.map(({ task }) => task.stop()), ...[...this.reclaimers.values()].map((r) => r.idle())]);
    this.registered.length = 0;
  }

  /** Last step: stops everything, lease renewal included, once no handler runs any more; the consumers' beats end. */
  async unschedule(): Promise<void> {
    await this.stopReclaiming();
    await Promise.all(this.leases.map((lease) => lease.stop()));
    this.leases.length = 0;
    // Not awaited (Redis may be gone at shutdown): sent before the connection's QUIT, so done by then.
    for (const reclaimer of this.reclaimers.values()) void reclaimer.endBeat();
  }

  private register(name: string, periodMs: number, run: () => Promise<unknown>): void {
    const task = new PeriodicTask(periodMs, run);
    this.registry.addInterval(name, task.timer);
    this.registered.push({ name, task });
  }
}
