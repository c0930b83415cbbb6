import type { Redis } from 'ioredis';
import { DeadLetterReason } from '../dead-letter-reason.js';
import { parkEntry as parkEntryWrite } from '../dead-letter/park-entry.js';
import { deadLetterMetadata } from '../dead-letter/dead-letter-record.js';
import { claimEpochKey } from '../keys/index.js';
import { isNoGroupError } from '../redis/errors/reply-errors.js';
import type { XPendingRow } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';

/** The error class written on an entry an operator sent to the dead-letter stream. */
export const PARKED_BY_OPERATOR = 'ParkedByOperator';

async function pendingRow(redis: Redis, stream: string, group: string, id: string): Promise<XPendingRow> {
  const rows = (await redis.xpending(stream, group, id, id, 1).catch((err) => {
    if (isNoGroupError(err)) throw new OperationError('not-found', OPERATIONS_MESSAGES.noGroup(stream, group));
    throw err;
  })) as XPendingRow[];
  if (!rows[0]) throw new OperationError('not-found', OPERATIONS_MESSAGES.notPending(stream, group, id));
  return rows[0];
}

/**
 * Acknowledges a pending entry without running it (XACK): the group will never process it. The
 * entry must be pending, so a typo in the id does not report success.
 */
export async function ackEntry(redis: Redis, stream: string, group: string, id: string): Promise<{ acked: string }> {
  await pendingRow(redis, stream, group, id);
  await redis.xack(stream, group, id);
  return { acked: id };
}

/**
 * Moves a pending entry to `consumer` (XCLAIM ... JUSTID: the delivery count stays as it is). A
 * live consumer runs it when it next drains its own PEL, or another consumer reclaims it once it
 * is idle past `minIdleTimeMs`. The claim raises the group's claim epoch in the same script, so
 * the entry's old owner, if still running it, acks it checked and does not ack it.
 */
export async function claimEntry(
  redis: ScriptedRedis,
  stream: string,
  group: string,
  id: string,
  consumer: string,
): Promise<{ claimed: string; from: string; to: string }> {
  const [, from] = await pendingRow(redis, stream, group, id);
  await redis.nrsClaimCounted(stream, claimEpochKey(stream, group), group, consumer, id);
  return { claimed: id, from, to: consumer };
}

/**
 * Sends a pending entry to the dead-letter stream with the transport's own park script (payload
 * copied byte for byte inside Redis, XADD and XACK together). It is recorded as `non-retryable`
 * with error class `ParkedByOperator` and can be re-driven like any dead letter; an entry whose
 * payload is already gone becomes a `payload-trimmed` tombstone. When the entry is what its
 * ordering key's block waits for (`onDeadLetter: 'block-key'`), the same script points the block
 * at the new dead letter and names the key on it, as the consumer's own park does: its re-drive
 * passes the block and its discard releases the key (else only a forced release would free it).
 */
export async function parkEntry(
  redis: ScriptedRedis,
  stream: string,
  group: string,
  id: string,
  deadLetterStream: string,
  actor: string,
): Promise<{ parked: string; deadLetterId: string }> {
  const [, consumer, , deliveries] = await pendingRow(redis, stream, group, id);
  const [entry] = await redis.xrange(stream, id, id);
  const error = Object.assign(new Error(OPERATIONS_MESSAGES.parkedByOperator(actor)), { name: PARKED_BY_OPERATOR });
  const reason = entry ? DeadLetterReason.NON_RETRYABLE : DeadLetterReason.PAYLOAD_TRIMMED;
  const meta = deadLetterMetadata({ reason, stream, id, group, consumer, deliveries: Number(deliveries), error });
  // Unfenced, whoever owns it: the operator's decision stands over any consumer's. The ordering
  // key is not known here (it is the handler's option): null has the script find its block.
  const deadLetterId = await parkEntryWrite(
    redis,
    { stream, group, consumer },
    { id, deadLetterStream, requireOwner: '0', metadata: meta, blockKey: null },
  );
  // Null: not pending any more (FENCED cannot come back, the write is not fenced).
  if (typeof deadLetterId !== 'string' || deadLetterId === '')
    throw new OperationError('not-found', OPERATIONS_MESSAGES.notPending(stream, group, id));
  return { parked: id, deadLetterId };
}
