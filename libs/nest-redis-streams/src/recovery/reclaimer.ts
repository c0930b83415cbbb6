import type { Logger } from '@nestjs/common';
import { claimEpochKey } from '../keys/index.js';
import type { TransportEvents } from '../events/transport-events.js';
import type { XAutoClaimJustIdReply } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { RecoveryTarget } from './recovery-target.interface.js';
import { RECOVERY_MESSAGES } from './recovery.messages.js';
import { auditTrimLoss } from './trim-audit.js';
import { beat, endBeat } from './consumer-beats.js';

/**
 * Takes over entries that sat pending longer than min-idle (a consumer died or hung) with
 * XAUTOCLAIM, following the cursor to `0-0`. Each claim resets the idle time atomically, so when
 * several instances reclaim at once every stale entry goes to exactly one of them per round.
 * Each round also audits the stream for entries trimmed before the group read them, and beats for
 * the consumer (see consumer-beats.ts): its liveness on servers that cannot tell it.
 */
export class Reclaimer {
  private round: Promise<number> | null = null;

  constructor(
    private readonly consumer: RecoveryTarget,
    private readonly redis: ScriptedRedis,
    private readonly count: number,
    private readonly events: TransportEvents,
    private readonly logger: Logger,
    /** How long each round's beat holds; 0: no beat. */
    private readonly beatTtlMs = 0,
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
    // Sent alongside the round's first claim (no round trip of its own), owned partition or not.
    const beating = this.beat();
    try {
      return await this.reclaimRound();
    } finally {
      await beating;
    }
  }

  /**
   * The consumer's beat (each round writes one; the scheduler writes the first at start, so a
   * new consumer is live before its first round). A failure only leaves liveness to the server.
   */
  async beat(): Promise<void> {
    if (this.beatTtlMs <= 0) return;
    const { stream, group, consumer } = this.consumer;
    await beat(this.redis, stream, group, consumer, this.beatTtlMs).catch((err: Error) =>
      this.logger.debug?.(RECOVERY_MESSAGES.beatFailed(stream, group, err.message)),
    );
  }

  /** The consumer stopped: it is no longer alive (a beat left to run out would say it is for a while). */
  async endBeat(): Promise<void> {
    if (this.beatTtlMs <= 0) return;
    const { stream, group, consumer } = this.consumer;
    await endBeat(this.redis, stream, group, consumer).catch(() => undefined);
  }

  private async reclaimRound(): Promise<number> {
    // Exclusive ownership: only the partition's owner reclaims (and audits) it.
    const fence = this.consumer.fence;
    if (fence && !fence.held) return 0;
    try {
      const claimed = await this.claimAll();
      await auditTrimLoss(this.consumer, this.redis, this.events, this.logger);
      return claimed;
    } catch (err) {
      this.logger.error(RECOVERY_MESSAGES.reclaimFailed(this.consumer.stream, this.consumer.group, (err as Error).message));
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
      const epoch = this.consumer.epoch;
      const reply = await this.autoclaim(minIdle, cursor, count);
      if (reply === null) break; // fenced: the partition is no longer this instance's
      const [next, ids, deleted = []] = reply;
      cursor = next;
      if (deleted.length > 0) {
        // Redis ≥ 7 already dropped these from the PEL: the payload was trimmed while pending.
        this.logger.error(RECOVERY_MESSAGES.trimmedWhilePending(stream, group, deleted));
        await this.consumer.tombstone(deleted);
      }
      claimed += await this.consumer.acceptClaimed(ids, epoch);
    } while (cursor !== '0-0');
    if (claimed > 0) {
      this.logger.warn(RECOVERY_MESSAGES.reclaimed(claimed, stream, group));
      this.events.emit('reclaimed', { stream, group, consumer, count: claimed });
    }
    return claimed;
  }

  /**
   * XAUTOCLAIM ... JUSTID: the claim does not count a delivery (the consumer counts one when the
   * handler starts), so entries claimed into the reserve and never started spend nothing. Fenced
   * by the partition's generation under exclusive ownership (null: refused). Both scripts raise
   * the group's claim epoch when they take anything, so the entries' old owner acks them checked.
   */
  private async autoclaim(minIdle: number, cursor: string, count: number): Promise<XAutoClaimJustIdReply | null> {
    const { stream, group, consumer, fence } = this.consumer;
    const epochKey = claimEpochKey(stream, group);
    if (!fence) return this.redis.nrsAutoClaimCounted(stream, epochKey, group, consumer, minIdle, cursor, count);
    const generation = fence.generation;
    if (generation === null) return null;
    const { ownerKey, member } = fence;
    const reply = await this.redis.nrsFencedAutoClaim(
      stream,
      epochKey,
      ownerKey,
      member,
      generation,
      group,
      consumer,
      minIdle,
      cursor,
      count,
      '1',
    );
    return reply as XAutoClaimJustIdReply | null;
  }
}
