import type { Redis } from 'ioredis';
import { DeadLetterReason } from '../dead-letter-reason.js';
import { operatorAck } from '../dead-letter/blocked-key-scripts.js';
import { parkEntry as parkEntryWrite } from '../dead-letter/park-entry.js';
import { deadLetterMetadata } from '../dead-letter/dead-letter-record.js';
import { claimEpochKey } from '../keys/index.js';
import { isNoGroupError } from '../redis/errors/reply-errors.js';
import type { XPendingRow } from '../redis/replies.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { BlockedKeyRelease } from './blocked-key-release.js';
import { type EntryPlace, fateOf } from './entry-fate.js';
import { OperationError } from './errors/operation.error.js';
import { OPERATIONS_MESSAGES } from './operations.messages.js';

/** The error class written on an entry an operator sent to the dead-letter stream. */
export const PARKED_BY_OPERATOR = 'ParkedByOperator';

// How often a park or claim reads the entry's owner again when a consumer took it in between.
const OWNER_TRIES = 3;

async function findPendingRow(redis: Redis, stream: string, group: string, id: string): Promise<XPendingRow | null> {
  const rows = (await redis.xpending(stream, group, id, id, 1).catch((err) => {
    if (isNoGroupError(err)) throw new OperationError('not-found', OPERATIONS_MESSAGES.noGroup(stream, group));
    throw err;
  })) as XPendingRow[];
  return rows[0] ?? null;
}

/** Refused as `conflict`: the entry changed while `action` ran; the message says what became of it. */
async function changedMeanwhile(redis: Redis, place: EntryPlace, id: string, action: string): Promise<never> {
  const fate = await fateOf(redis, place, id);
  throw new OperationError('conflict', OPERATIONS_MESSAGES.changedMeanwhile(action, place.stream, place.group, id, fate));
}

/**
 * Runs `write` on a pending entry as the owner just read: `write` answers null when, in its own
 * script, the entry is no longer pending with that owner. Not pending at first: not found (a typo,
 * or handled long ago). Taken by another consumer meanwhile: read and written again. Gone
 * meanwhile (acked, parked): a `conflict` that says what became of it, nothing written. A check
 * here and a write after it would race a consumer's ack or park, or a second operator's click.
 */
async function onPendingEntry<T>(
  redis: Redis,
  place: EntryPlace,
  id: string,
  action: string,
  write: (row: XPendingRow) => Promise<T | null>,
): Promise<T> {
  const { stream, group } = place;
  let row = await findPendingRow(redis, stream, group, id);
  if (!row) throw new OperationError('not-found', OPERATIONS_MESSAGES.notPending(stream, group, id));
  for (let tries = 1; ; tries++) {
    const done = await write(row);
    if (done !== null) return done;
    row = await findPendingRow(redis, stream, group, id);
    if (!row) return changedMeanwhile(redis, place, id, action);
    if (tries === OWNER_TRIES)
      throw new OperationError('conflict', OPERATIONS_MESSAGES.ownerKeptChanging(action, stream, group, id, tries));
  }
}

/**
 * Acknowledges a pending entry without running it (XACK): the group will never process it. The
 * entry must be pending, so a typo in the id does not report success; acked or parked by someone
 * else meanwhile (the script finds it no longer pending), it is refused as a `conflict`. When its
 * ordering key's block waits for it (`onDeadLetter: 'block-key'`: a failing blocker whose retry
 * is due, or a released or re-driven copy), the ack means "done" as the handler's own success
 * does: the same script releases the key's next held entry (`released`), else nothing would ever
 * free the key but a forced release.
 */
export async function ackEntry(
  redis: Redis,
  place: EntryPlace,
  id: string,
): Promise<{ acked: string; released?: BlockedKeyRelease }> {
  const { stream, group } = place;
  if (!(await findPendingRow(redis, stream, group, id)))
    throw new OperationError('not-found', OPERATIONS_MESSAGES.notPending(stream, group, id));
  const done = await operatorAck(redis, stream, group, id);
  if (!done.acked) return changedMeanwhile(redis, place, id, 'ack');
  return done.key === undefined ? { acked: id } : { acked: id, released: { key: done.key, released: done.released ?? null } };
}

/**
 * Moves a pending entry to `consumer` (XCLAIM ... JUSTID: the delivery count stays as it is). A
 * live consumer runs it when it next drains its own PEL, or another consumer reclaims it once it
 * is idle past `minIdleTimeMs`. The claim raises the group's claim epoch in the same script, so
 * the entry's old owner, if still running it, acks it checked and does not ack it. The script
 * takes it only from the owner read just before (`from` is who really held it).
 */
export async function claimEntry(
  redis: ScriptedRedis,
  place: EntryPlace,
  id: string,
  consumer: string,
): Promise<{ claimed: string; from: string; to: string }> {
  const { stream, group } = place;
  return onPendingEntry(redis, place, id, 'claim', async ([, from]) => {
    const [claimed, gone] = await redis.nrsClaimFromCounted(stream, claimEpochKey(stream, group), group, from, consumer, id);
    // Its payload is gone: XCLAIM would drop the PEL row, the only trace of it. Left as it is.
    if (gone.length > 0) throw new OperationError('refused', OPERATIONS_MESSAGES.claimOfTrimmed(stream, group, id, from));
    return claimed.length === 0 ? null : { claimed: id, from, to: consumer };
  });
}

/**
 * The park script run for an operator, as the PEL `row` just read says the entry is held: only
 * while that consumer still holds it (null when not). Unfenced: the operator's decision stands
 * over the consumer's generation. The ordering key is not known here (it is the handler's
 * option): null has the script find the block that waits for the entry (`onDeadLetter:
 * 'block-key'`) and name its key on the dead letter. An entry whose payload is gone becomes a
 * `payload-trimmed` tombstone.
 */
export async function parkAsHeld(
  redis: ScriptedRedis,
  place: EntryPlace,
  [id, consumer, , deliveries]: XPendingRow,
  details: { reason: DeadLetterReason; error?: Error },
): Promise<string | null> {
  const { stream, group, deadLetterStream } = place;
  const meta = deadLetterMetadata({ ...details, stream, id, group, consumer, deliveries: Number(deliveries) });
  const write = { id, deadLetterStream, requireOwner: '1', metadata: meta, blockKey: null } as const;
  const deadLetterId = await parkEntryWrite(redis, { stream, group, consumer }, write);
  // FENCED cannot come back: the write is not fenced.
  return typeof deadLetterId === 'string' && deadLetterId !== '' ? deadLetterId : null;
}

/**
 * Sends a pending entry to the dead-letter stream with the transport's own park script (payload
 * copied byte for byte inside Redis, XADD and XACK together). It is recorded as `non-retryable`
 * with error class `ParkedByOperator` and can be re-driven like any dead letter; an entry whose
 * payload is already gone becomes a `payload-trimmed` tombstone. When the entry is what its
 * ordering key's block waits for (`onDeadLetter: 'block-key'`), the same script points the block
 * at the new dead letter and names the key on it, as the consumer's own park does: its re-drive
 * passes the block and its discard releases the key (else only a forced release would free it).
 * The script parks it only while the owner just read still holds it: an entry acked or parked
 * meanwhile (by its consumer, or a second click) is never parked again (a second dead letter
 * would run the handler twice when both are re-driven).
 */
export async function parkEntry(
  redis: ScriptedRedis,
  place: EntryPlace,
  id: string,
  actor: string,
): Promise<{ parked: string; deadLetterId: string }> {
  return onPendingEntry(redis, place, id, 'park', async (row) => {
    const [entry] = await redis.xrange(place.stream, id, id);
    const error = Object.assign(new Error(OPERATIONS_MESSAGES.parkedByOperator(actor)), { name: PARKED_BY_OPERATOR });
    const reason = entry ? DeadLetterReason.NON_RETRYABLE : DeadLetterReason.PAYLOAD_TRIMMED;
    // Null: no longer pending with the consumer read.
    const deadLetterId = await parkAsHeld(redis, place, row, { reason, error });
    return deadLetterId === null ? null : { parked: id, deadLetterId };
  });
}
