import type { Logger } from '@nestjs/common';
import type { TransportEvents } from '../events/transport-events.js';
import { FENCED, claimIfOwned } from '../ownership/fenced-writes.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { RecoveryTarget } from './recovery-target.interface.js';
import { RECOVERY_MESSAGES } from './recovery.messages.js';

const IDS_PER_CALL = 1000;

/**
 * Keeps this consumer's in-flight entries from looking idle: every fraction of min-idle it
 * re-claims them to itself (XCLAIM ... JUSTID resets idle without counting a delivery), in one
 * script call per 1,000 ids that first checks it still owns each one. A slow but healthy handler
 * is therefore never reclaimed by another instance, however short min-idle is.
 *
 * A lease is not for ever: a handler running longer than `maxHandlerMs` is taken for hung. Its
 * lease is no longer renewed (so the entry becomes reclaimable once idle past min-idle) and its
 * abort signal fires; otherwise renewal would hide a hung handler behind an idle time of zero.
 */
export class LeaseKeeper {
  private busy = false;

  constructor(
    private readonly consumer: RecoveryTarget,
    private readonly redis: ScriptedRedis,
    private readonly events: TransportEvents,
    private readonly logger: Logger,
  ) {}

  /** One renewal round. Never throws. */
  async renew(): Promise<void> {
    if (this.busy || this.consumer.heldCount === 0) return;
    // Exclusive ownership: a partition given up or lost has nothing to renew from here.
    if (this.consumer.fence && this.consumer.fence.generation === null) return;
    this.busy = true;
    const { stream, group } = this.consumer;
    try {
      const ids = this.renewable();
      for (let i = 0; i < ids.length; i += IDS_PER_CALL) {
        const chunk = ids.slice(i, i + IDS_PER_CALL);
        const renewed = await claimIfOwned(this.redis, this.consumer, 0, -1, chunk);
        // The partition's lease had run out: nothing is known lost yet. The ownership round renews
        // it (same generation: the entries are still this consumer's) or finds it taken.
        if (renewed === FENCED) break;
        const [lost, trimmed] = renewed;
        for (const id of lost) this.consumer.markLost(id);
        for (const id of trimmed) this.consumer.markTrimmed(id);
        this.events.emit('lease-renewed', { stream, group, count: chunk.length - lost.length - trimmed.length });
      }
    } catch (err) {
      this.logger.warn(RECOVERY_MESSAGES.leaseRenewalFailed(stream, group, (err as Error).message));
    } finally {
      this.busy = false;
    }
  }

  /** Held entries whose lease is still alive; expires the ones whose handler ran too long. */
  private renewable(): string[] {
    const { maxHandlerMs } = this.consumer.options;
    const now = Date.now();
    const ids: string[] = [];
    for (const entry of this.consumer.heldEntries()) {
      if (entry.leaseExpired) continue;
      const runningMs = entry.startedAt > 0 ? now - entry.startedAt : 0;
      if (runningMs <= maxHandlerMs) {
        ids.push(entry.id);
        continue;
      }
      entry.leaseExpired = true;
      entry.abort(RECOVERY_MESSAGES.leaseExpired(entry.id, maxHandlerMs));
      const { stream, group, consumer } = this.consumer;
      this.logger.error(RECOVERY_MESSAGES.handlerHung(entry.id, stream, group, runningMs, maxHandlerMs));
      this.events.emit('lease-expired', {
        stream,
        group,
        consumer,
        id: entry.id,
        deliveries: entry.deliveries,
        runningMs,
        maxHandlerMs,
      });
    }
    return ids;
  }
}
