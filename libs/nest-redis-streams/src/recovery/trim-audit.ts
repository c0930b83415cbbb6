import type { Logger } from '@nestjs/common';
import type { TransportEvents } from '../events/transport-events.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { StreamConsumer } from '../server/stream-consumer.js';
import { DeadLetterReason } from './dead-letter-record.js';

/** Suffix of the hash (beside the dead-letter stream, same slot) remembering reported losses. */
const AUDIT_SUFFIX = ':trim-audit';

/**
 * Looks for entries that a plain MAXLEN/MINID trim removed before this consumer's group read
 * them, and writes one `trimmed-undelivered` tombstone per newly found loss. Pending entries
 * that lose their payload are found elsewhere (reclaim, retries, leases); this covers the ones
 * no consumer ever saw, which would otherwise vanish without a trace. Never throws.
 */
export async function auditTrimLoss(
  consumer: StreamConsumer, redis: ScriptedRedis, events: TransportEvents, logger: Logger,
): Promise<number> {
  const { stream, group } = consumer;
  const dlq = consumer.subscription.options.deadLetterStream;
  try {
    const found = await redis.nrsAuditTrimLoss(stream, dlq, `${dlq}${AUDIT_SUFFIX}`, group, consumer.consumer, Date.now());
    if (!found) return 0;
    const [count, deadLetterId] = found;
    logger.error(
      `${count} entries of stream "${stream}" were trimmed away before group "${group}" read them: data lost ` +
        `before any consumer saw it. Tombstone ${deadLetterId} in "${dlq}". Trim with safe retention, or raise MAXLEN above the backlog.`,
    );
    events.emit('dead-lettered', {
      stream, group, consumer: consumer.consumer, id: '', deliveries: 0,
      reason: DeadLetterReason.TRIMMED_UNDELIVERED, deadLetterStream: dlq, deadLetterId, count,
    });
    return count;
  } catch (err) {
    logger.warn(`Trim audit of stream "${stream}" group "${group}" failed: ${(err as Error).message}`);
    return 0;
  }
}
