import type { Logger } from '@nestjs/common';
import type { TransportEvents } from '../events/transport-events.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { StreamConsumer } from '../server/stream-consumer.js';

const IDS_PER_CALL = 1000;

/**
 * Keeps this consumer's in-flight entries from looking idle: every fraction of min-idle it
 * re-claims them to itself (XCLAIM ... JUSTID resets idle without counting a delivery), in one
 * script call per 1,000 ids that first checks it still owns each one. A slow but healthy handler
 * is therefore never reclaimed by another instance, however short min-idle is.
 */
export class LeaseKeeper {
  private busy = false;

  constructor(
    private readonly consumer: StreamConsumer,
    private readonly redis: ScriptedRedis,
    private readonly events: TransportEvents,
    private readonly logger: Logger,
  ) {}

  /** One renewal round. Never throws. */
  async renew(): Promise<void> {
    if (this.busy || this.consumer.held.size === 0) return;
    this.busy = true;
    const { stream, group, consumer } = this.consumer;
    try {
      const ids = [...this.consumer.held.keys()];
      for (let i = 0; i < ids.length; i += IDS_PER_CALL) {
        const chunk = ids.slice(i, i + IDS_PER_CALL);
        const [lost, trimmed] = await this.redis.nrsClaimIfOwned(stream, group, consumer, 0, -1, ...chunk);
        for (const id of lost) this.consumer.markLost(id);
        for (const id of trimmed) this.consumer.markTrimmed(id);
        this.events.emit('lease-renewed', { stream, group, count: chunk.length - lost.length - trimmed.length });
      }
    } catch (err) {
      this.logger.warn(`Lease renewal on stream "${stream}" group "${group}" failed: ${(err as Error).message}`);
    } finally {
      this.busy = false;
    }
  }
}
