import { Injectable } from '@nestjs/common';
import { type HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import { SERVER_DEFAULTS } from '../constants.js';
import type { RedisStreamsServer } from '../server/redis-streams.server.js';
import type { ConsumerView } from '../consumer/index.js';
import { HEALTH_DEFAULTS, HEALTH_MESSAGES } from './health.constants.js';
import type { LivenessOptions, ReadinessOptions } from './health-options.interface.js';
import { collectServerStats, type ConsumerStats, readyCommands } from './server-stats.js';
import type { ReadLoopReport, StreamHealthReport } from './health-report.interface.js';
import { evaluateStreamStats, resolveThresholds } from './stream-health.js';
import { withTimeout } from './with-timeout.js';
import { type CapabilitySummary, summarizeCapabilities } from '../redis/capabilities.js';

export type { ReadLoopReport, StreamHealthReport } from './health-report.interface.js';

/** Readiness details of one logical stream and group under exclusive ownership. */
export type OwnershipReport = ReturnType<RedisStreamsServer['getOwnership']>[number];

/**
 * Terminus 12 indicator for a `RedisStreamsServer`:
 *
 * ```ts
 * @Get('ready') @HealthCheck()
 * ready() {
 *   return this.health.check([() => this.indicator.isReady('redis-streams', this.server, { maxLag: 5_000 })]);
 * }
 * ```
 *
 * `isLive` fails only when this instance is wedged (Redis unreachable, a read loop stuck), so
 * restarting it can help; `isReady` applies the backlog thresholds, which restarting does not fix.
 * Neither throws: every failure is reported as `down` with a `reason`.
 */
@Injectable()
export class RedisStreamsHealthIndicator {
  // A loop that never completed a read is timed from when an indicator first looked at it.
  private readonly firstSeen = new WeakMap<ConsumerView, number>();

  constructor(private readonly health: HealthIndicatorService) {}

  /**
   * Readiness: per stream/group pending count, oldest pending idle time, lag, dead letters and
   * consumers (one pipelined round trip for all), compared with the thresholds. Pending, idle and
   * lag past their limits → `down`; dead letters past `maxDeadLetters` → `degraded`.
   */
  async isReady<const Key extends string>(
    key: Key,
    server: RedisStreamsServer,
    options: ReadinessOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const session = this.health.check(key);
    let measured: ConsumerStats[];
    try {
      measured = await collectServerStats(
        server,
        options.idleSampleSize ?? HEALTH_DEFAULTS.idleSampleSize,
        options.timeoutMs ?? HEALTH_DEFAULTS.timeoutMs,
      );
    } catch (err) {
      return session.down({ reason: errorMessage(err) });
    }
    const now = Date.now();
    const streams = measured.map((m) => this.report(m, options, now));
    const reasons = streams.flatMap((s) => (s.reason ? [s.reason] : []));
    const data: {
      streams: StreamHealthReport[];
      reason?: string;
      ownership?: OwnershipReport[];
      capabilities?: CapabilitySummary;
    } = { streams };
    if (reasons.length > 0) data.reason = reasons.join(' ');
    // Exclusive ownership only: who owns which partition, under which generation.
    const ownership = server.getOwnership();
    if (ownership.length > 0) data.ownership = ownership;
    // Which newer stream commands the nodes offer, and which node is below its patch floor.
    const capabilities = server.getCapabilities();
    if (capabilities) data.capabilities = summarizeCapabilities(capabilities);
    if (streams.some((s) => s.status === 'down')) return session.down(data);
    if (streams.some((s) => s.status === 'degraded')) {
      // Terminus 12 has a "degraded" status; Terminus 11 has not: there the check passes as up and
      // its details say `degraded: true`, so the probe stays green either way.
      const terminus12 = session as unknown as { degraded?: (details: object) => HealthIndicatorResult<Key> };
      return typeof terminus12.degraded === 'function'
        ? terminus12.degraded.call(session, data)
        : session.up({ ...data, degraded: true });
    }
    return session.up(data);
  }

  /**
   * Liveness: `down` only when this instance is wedged: Redis does not answer PING within
   * `timeoutMs`, a read loop that has room has not completed a read for longer than `graceMs`,
   * or a handler has run past `maxHandlerMs` (its lease expired: the handler counts as hung).
   */
  async isLive<const Key extends string>(
    key: Key,
    server: RedisStreamsServer,
    options: LivenessOptions = {},
  ): Promise<HealthIndicatorResult<Key>> {
    const session = this.health.check(key);
    const timeoutMs = options.timeoutMs ?? HEALTH_DEFAULTS.timeoutMs;
    const blockMs = server.options.blockMs ?? SERVER_DEFAULTS.blockMs;
    const graceMs = options.graceMs ?? HEALTH_DEFAULTS.graceBlockReads * blockMs + HEALTH_DEFAULTS.graceSlackMs;
    const problems: string[] = [];
    let pingMs: number | null = null;
    try {
      const redis = readyCommands(server);
      const started = performance.now();
      await withTimeout(redis.ping(), timeoutMs, 'Redis PING');
      pingMs = Math.round(performance.now() - started);
    } catch (err) {
      problems.push(errorMessage(err));
    }
    const now = Date.now();
    const readLoops: ReadLoopReport[] = server.getConsumers().map((consumer) => {
      const lastReadAgeMs = this.readLoopAgeMs(consumer, now);
      // A loop waiting for a free slot is as healthy as its handlers, which are judged below by
      // their age: full slots running slow but healthy work must not get the pod restarted.
      if (lastReadAgeMs > graceMs && consumer.waitingForRoomSince === 0) {
        problems.push(HEALTH_MESSAGES.readLoopStalled(consumer.stream, consumer.group, lastReadAgeMs, graceMs));
      }
      const { stream, group, consumer: name } = consumer;
      const longest = consumer.longestRunning(now);
      const maxHandlerMs = options.maxHandlerMs ?? consumer.subscription.options.maxHandlerMs;
      if (longest && longest.runningMs > maxHandlerMs) {
        const full = consumer.room <= 0 ? HEALTH_MESSAGES.prefetchFull(consumer.held.size) : '';
        problems.push(HEALTH_MESSAGES.handlerHung(stream, group, longest.id, longest.runningMs, maxHandlerMs) + full);
      }
      return {
        stream,
        group,
        consumer: name,
        lastReadAgeMs,
        held: consumer.held.size,
        longestHandlerMs: longest?.runningMs ?? 0,
      };
    });
    const data = { pingMs, graceMs, readLoops };
    return problems.length > 0 ? session.down({ ...data, reason: problems.join(' ') }) : session.up(data);
  }

  private report({ consumer, stats }: ConsumerStats, options: ReadinessOptions, now: number): StreamHealthReport {
    const { stream, group } = consumer;
    const readLoopAgeMs = this.readLoopAgeMs(consumer, now);
    const oldestRunningMs = consumer.longestRunning(now)?.runningMs ?? 0;
    if (stats instanceof Error) return { stream, group, status: 'down', readLoopAgeMs, oldestRunningMs, reason: stats.message };
    const limits = resolveThresholds(options, stream, consumer.subscription.pattern, group);
    const { status, reasons } = evaluateStreamStats(stats, limits);
    return { ...stats, status, readLoopAgeMs, oldestRunningMs, ...(reasons.length > 0 && { reason: reasons.join(' ') }) };
  }

  private readLoopAgeMs(consumer: ConsumerView, now: number): number {
    if (consumer.lastReadAt > 0) return now - consumer.lastReadAt;
    let seen = this.firstSeen.get(consumer);
    if (seen === undefined) this.firstSeen.set(consumer, (seen = now));
    return now - seen;
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
