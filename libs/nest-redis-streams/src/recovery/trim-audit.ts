import type { Logger } from '@nestjs/common';
import type { TransportEvents } from '../events/transport-events.js';
import { legacyTrimAuditKey, slotOf, trimAuditKey } from '../keys/index.js';
import { isCluster } from '../redis/connection.factory.js';
import type { TrimAuditConnection, ScriptedRedis } from '../redis/scripts.js';
import type { RecoveryTarget } from './recovery-target.interface.js';
import { DLQ_FIELDS, DeadLetterReason } from '../dead-letter/dead-letter-record.js';
import { RECOVERY_MESSAGES } from './recovery.messages.js';

/**
 * The tombstone's field names and reason, in the order the audit script takes them: names live
 * in DLQ_FIELDS, not in the script.
 */
export const trimAuditFieldArgs: readonly string[] = [
  DLQ_FIELDS.reason,
  DLQ_FIELDS.stream,
  DLQ_FIELDS.id,
  DLQ_FIELDS.group,
  DLQ_FIELDS.consumer,
  DLQ_FIELDS.deliveries,
  DLQ_FIELDS.time,
  DLQ_FIELDS.lostCount,
  DLQ_FIELDS.error,
  DeadLetterReason.TRIMMED_UNDELIVERED,
];

/**
 * The hash earlier versions kept beside the dead-letter stream. Read once per stream and group
 * by the script: a group audited there before had its losses reported already, so the audit
 * starts from the current count instead of reporting them again. When that key is outside the
 * stream's slot (a cluster dead-letter stream without a hash tag), the new key is passed in its
 * place, which the script reads as "no old state".
 */
function legacyAuditKey(redis: TrimAuditConnection, stream: string, dlq: string, auditKey: string): string {
  const legacy = legacyTrimAuditKey(dlq);
  return !isCluster(redis) || slotOf(legacy) === slotOf(stream) ? legacy : auditKey;
}

/**
 * Looks for entries that a plain MAXLEN/MINID trim removed before this consumer's group read
 * them, and writes one `trimmed-undelivered` tombstone per newly found loss. Pending entries
 * that lose their payload are found elsewhere (reclaim, retries, leases); this covers the ones
 * no consumer ever saw, which would otherwise vanish without a trace. Never throws.
 */
export async function auditTrimLoss(
  consumer: RecoveryTarget,
  redis: ScriptedRedis,
  events: TransportEvents,
  logger: Logger,
): Promise<number> {
  const count = await audit(consumer, redis, events, logger, false);
  // A failed audit did not count: repairing now would erase the evidence of a loss (7.0).
  if (count === null) return 0;
  try {
    // After the audit has counted this round's losses (a trim loss leaves the same gap in the
    // counters): a caught-up group whose entries-read went stale (Redis 7.0 replicas do not
    // advance it, so after a failover) is set right, so lag is exact again.
    const repaired = await redis.nrsRepairEntriesRead(consumer.stream, consumer.group);
    if (repaired > 0) logger.warn(RECOVERY_MESSAGES.staleEntriesRead(consumer.group, consumer.stream, repaired));
  } catch (err) {
    logger.warn(RECOVERY_MESSAGES.trimAuditFailed(consumer.stream, consumer.group, (err as Error).message));
  }
  return count;
}

/**
 * The audit a read loop runs before a read that may cross entries trimmed while its group was
 * behind (`readForgetsTrimGap` servers: Redis 7.2+, 8.x, Valkey, where that read makes the
 * counters forget the loss). It returns at once, writing nothing, unless the whole stream lies
 * ahead of the group's last-delivered-id; then it is the round's audit. Never throws.
 *
 * The script is sent before this returns its promise: given the reader (`withInOrderAudit`),
 * the loop sends its read right after without waiting, and Redis runs the audit first.
 */
export function auditTrimLossBeforeRead(
  consumer: RecoveryTarget,
  redis: TrimAuditConnection,
  events: TransportEvents,
  logger: Pick<Logger, 'warn' | 'error'>,
): Promise<number> {
  return audit(consumer, redis, events, logger, true).then((count) => count ?? 0);
}

async function audit(
  consumer: RecoveryTarget,
  redis: TrimAuditConnection,
  events: TransportEvents,
  logger: Pick<Logger, 'warn' | 'error'>,
  beforeRead: boolean,
): Promise<number | null> {
  const { stream, group } = consumer;
  const dlq = consumer.options.deadLetterStream;
  try {
    const auditKey = trimAuditKey(stream);
    const found = await redis.nrsAuditTrimLoss(
      stream,
      dlq,
      auditKey,
      legacyAuditKey(redis, stream, dlq, auditKey),
      group,
      consumer.consumer,
      Date.now(),
      ...trimAuditFieldArgs,
      beforeRead ? '1' : '0',
    );
    if (!found) return 0;
    const [count, deadLetterId] = found;
    logger.error(RECOVERY_MESSAGES.trimmedUndelivered(count, stream, group, deadLetterId, dlq));
    events.emit('dead-lettered', {
      stream,
      group,
      consumer: consumer.consumer,
      id: '',
      deliveries: 0,
      reason: DeadLetterReason.TRIMMED_UNDELIVERED,
      deadLetterStream: dlq,
      deadLetterId,
      count,
    });
    return count;
  } catch (err) {
    logger.warn(RECOVERY_MESSAGES.trimAuditFailed(stream, group, (err as Error).message));
    return null;
  }
}
