import { Injectable } from '@nestjs/common';
import { type HealthIndicatorResult, HealthIndicatorService } from '@nestjs/terminus';
import type { OutboxRelay } from './outbox-relay.js';

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
    let figures: { backlog: number; oldestAgeMs: number };
    try {
      figures = await relay.backlog();
    } catch (err) {
      return session.down({ reason: `The outbox table could not be read: ${(err as Error).message}` });
    }
    const data = { ...figures, roundAgeMs, listening: status.listening, lastError: status.lastError };
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
    return reasons.length ? session.down({ ...data, reason: reasons.join(' ') }) : session.up(data);
  }
}
