import { Injectable } from '@nestjs/common';
import { type HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import type { OutboxRelay } from './outbox-relay.js';
import type { OutboxBacklog } from './outbox-round.js';

/** Thresholds of `OutboxHealthIndicator.isHealthy`. */
export interface OutboxHealthOptions {
  /**
   * Down when the oldest unpublished event is older than this (Redis down, a poison event).
   * @default 60000
   */
  maxOldestAgeMs?: number;
  /**
   * Down when the backlog is larger (unset: no limit).
   */
  maxBacklog?: number;
  /**
   * Down when more events are parked (unset: parked events are reported in the data, and alerted
   * on by `RedisStreamsOutboxEventsParked`, without making the service unhealthy).
   */
  maxParked?: number;
  /**
   * Down when no round finished for this long (the database unreachable, the relay stuck).
   * @default 5 × the relay's pollIntervalMs, at least 10000
   */
  maxRoundAgeMs?: number;
}

/**
 * Terminus indicator for an `OutboxRelay`:
 * `this.health.check([() => this.outboxHealth.isHealthy('outbox', this.relay)])`.
 */
@Injectable()
export class OutboxHealthIndicator {
  constructor(private readonly health: HealthIndicatorService) {}

  async isHealthy(key: string, relay: OutboxRelay, options: OutboxHealthOptions = {}): Promise<HealthIndicatorResult> {
    const session = this.health.check(key);
    const status = relay.status();
    const maxRoundAgeMs = options.maxRoundAgeMs ?? Math.max(10_000, 5 * status.pollIntervalMs);
    const maxOldestAgeMs = options.maxOldestAgeMs ?? 60_000;
    const roundAgeMs = status.lastRoundAt ? Date.now() - status.lastRoundAt : null;
    let figures: OutboxBacklog;
    try {
      figures = await relay.backlog();
    } catch (err) {
      return session.down({ reason: `The outbox table could not be read: ${(err as Error).message}` });
    }
    const data = {
      backlog: figures.backlog,
      oldestAgeMs: figures.oldestAgeMs,
      parked: figures.parked,
      roundAgeMs,
      listening: status.listening,
      lastError: status.lastError,
    };
    const reasons: string[] = [];
    if (!status.running) reasons.push('The outbox relay is not running (not started, or closed).');
    if (roundAgeMs === null || roundAgeMs > maxRoundAgeMs) {
      reasons.push(
        `No relay round finished in ${roundAgeMs ?? 'any'} ms, above maxRoundAgeMs ${maxRoundAgeMs}${status.lastError ? ` (last error: ${status.lastError})` : ''}.`,
      );
    }
    if (figures.oldestAgeMs > maxOldestAgeMs) {
      reasons.push(
        `The oldest unpublished outbox event is ${Math.round(figures.oldestAgeMs)} ms old, above maxOldestAgeMs ${maxOldestAgeMs}.`,
      );
    }
    if (options.maxBacklog !== undefined && figures.backlog > options.maxBacklog) {
      reasons.push(`The outbox backlog is ${figures.backlog}, above maxBacklog ${options.maxBacklog}.`);
    }
    if (options.maxParked !== undefined && figures.parked > options.maxParked) {
      reasons.push(`${figures.parked} outbox events are parked, above maxParked ${options.maxParked}: see outbox.listParked().`);
    }
    return reasons.length ? session.down({ ...data, reason: reasons.join(' ') }) : session.up(data);
  }
}
