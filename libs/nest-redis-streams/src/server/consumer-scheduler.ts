import type { Logger } from '@nestjs/common';
import type { SchedulerRegistry } from '@nestjs/schedule';
import type { TransportEvents } from '../events/transport-events.js';
import { LeaseKeeper } from '../recovery/lease-keeper.js';
import { Reclaimer } from '../recovery/reclaimer.js';
import { removeIdleConsumers } from '../recovery/idle-consumers.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { ResolvedServerOptions } from './resolve-options.js';
import type { StreamConsumer } from './stream-consumer.js';

/** Fastest lease renewal period: renewing more often buys nothing and costs round trips. */
const MIN_LEASE_PERIOD_MS = 50;

/**
 * Registers the periodic recovery work of each consumer in @nestjs/schedule's SchedulerRegistry
 * (periods come from runtime options, so static @Interval decorators cannot be used):
 * reclaim (XAUTOCLAIM), lease renewal and idle-consumer housekeeping.
 */
export class ConsumerScheduler {
  private readonly names: string[] = [];

  constructor(
    private readonly registry: SchedulerRegistry,
    private readonly options: ResolvedServerOptions,
    private readonly redis: ScriptedRedis,
    private readonly events: TransportEvents,
    private readonly logger: Logger,
  ) {}

  /** Reclaimers of the given consumers, for a manual round (`server.reclaimNow()`, tests). */
  readonly reclaimers = new Map<StreamConsumer, Reclaimer>();

  schedule(consumers: StreamConsumer[]): void {
    for (const consumer of consumers) {
      const id = `${consumer.stream}:${consumer.group}:${consumer.consumer}`;
      const reclaimer = new Reclaimer(consumer, this.redis, this.options.reclaimCount, this.events, this.logger);
      this.reclaimers.set(consumer, reclaimer);
      if (this.options.reclaimIntervalMs > 0) {
        this.add(`nrs:reclaim:${id}`, this.options.reclaimIntervalMs, () => reclaimer.run());
      }
      if (this.options.leaseRenewal) {
        const lease = new LeaseKeeper(consumer, this.redis, this.events, this.logger);
        const period = Math.max(MIN_LEASE_PERIOD_MS, Math.floor(consumer.subscription.options.minIdleTimeMs / 3));
        this.add(`nrs:lease:${id}`, period, () => lease.renew());
      }
      if (this.options.removeIdleConsumersAfterMs > 0) {
        const after = this.options.removeIdleConsumersAfterMs;
        this.add(`nrs:housekeeping:${id}`, Math.max(1_000, Math.floor(after / 2)), () =>
          removeIdleConsumers(this.redis, consumer.stream, consumer.group, after, this.logger, consumer.consumer),
        );
      }
    }
  }

  /** Removes this server's intervals; the registry may have cleared them already at shutdown. */
  unschedule(): void {
    for (const name of this.names) {
      if (this.registry.doesExist('interval', name)) this.registry.deleteInterval(name);
    }
    this.names.length = 0;
  }

  private add(name: string, periodMs: number, task: () => Promise<unknown>): void {
    // Each task catches its own errors; the registry does not wrap callbacks.
    const handle = setInterval(() => void task(), periodMs);
    this.registry.addInterval(name, handle);
    this.names.push(name);
  }
}
