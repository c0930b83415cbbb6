import type { Logger } from '@nestjs/common';
import type { TransportEvents } from '../events/transport-events.js';
import type { XAutoClaimReply } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { RecoveryTarget } from './recovery-target.interface.js';
import { auditTrimLoss } from './trim-audit.js';

/**
 * Takes over entries that sat pending longer than min-idle (a consumer died or hung) with
 * XAUTOCLAIM, following the cursor to `0-0`. Each claim resets the idle time atomically, so when
 * several instances reclaim at once every stale entry goes to exactly one of them per round.
 * Each round also audits the stream for entries trimmed before the group read them.
 */
export class Reclaimer {
  private round: Promise<number> | null = null;

  constructor(
    private readonly consumer: RecoveryTarget,
    private readonly redis: ScriptedRedis,
    private readonly count: number,
    private readonly events: TransportEvents,
    private readonly logger: Logger,
  ) {}

  /** One reclaim round (none while one runs). Never throws: a scheduler callback has no one to report to. */
  run(): Promise<number> {
    if (this.round) return Promise.resolve(0);
    this.round = this.claimRound().finally(() => (this.round = null));
    return this.round;
  }

  /** Resolves once the round in flight, if any, has finished (shutdown waits for it). */
  async idle(): Promise<void> {
    await this.round;
  }

  private async claimRound(): Promise<number> {
    try {
      const claimed = await this.claimAll();
      await auditTrimLoss(this.consumer, this.redis, this.events, this.logger);
      return claimed;
    } catch (err) {
      this.logger.error(
        `Reclaim of stream "${this.consumer.stream}" group "${this.consumer.group}" failed: ${(err as Error).message}`,
      );
      return 0;
    }
  }

  private async claimAll(): Promise<number> {
    const { stream, group, consumer } = this.consumer;
    const minIdle = this.consumer.options.minIdleTimeMs;
    let cursor = '0-0';
    let claimed = 0;
    do {
      // Never claim more than this consumer may hold (prefetch plus a reserve for late entries).
      const count = Math.min(this.count, this.consumer.reclaimRoom);
      if (count <= 0) break;
      const [next, entries, deleted = []] = (await this.redis.xautoclaim(
        stream,
        group,
        consumer,
        minIdle,
        cursor,
        'COUNT',
        count,
      )) as XAutoClaimReply;
      cursor = next;
      if (deleted.length > 0) {
        // Redis ≥ 7 already dropped these from the PEL: the payload was trimmed while pending.
        this.logger.error(
          `${deleted.length} pending entries of stream "${stream}" group "${group}" had been trimmed away ` +
            `before anyone acked them (${deleted.slice(0, 5).join(', ')}${deleted.length > 5 ? ', ...' : ''}); ` +
            'writing tombstones to the dead-letter stream. Use safe trimming to prevent this.',
        );
        await this.consumer.tombstone(deleted);
      }
      claimed += await this.consumer.acceptClaimed(entries);
    } while (cursor !== '0-0');
    if (claimed > 0) {
      this.logger.warn(`Reclaimed ${claimed} idle entries of stream "${stream}" group "${group}".`);
      this.events.emit('reclaimed', { stream, group, consumer, count: claimed });
    }
    return claimed;
  }
}
