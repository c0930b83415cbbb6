import { REPLY_STREAM_INFIX } from '../keys/index.js';
import { timePhrase } from '../time-text.js';

/** Log lines and errors of the consumer engine: full sentences naming the stream, the entry and the fix. */
export const CONSUMER_MESSAGES = {
  partitionsHandedOver: (stream: string, group: string, released: number) =>
    `Handed partition "${stream}" of group "${group}" over to another instance` +
    (released > 0 ? ` (${released} unfinished entries handed back).` : '.'),
  ackFailed: (count: number, stream: string, group: string, cause: string) =>
    `Ack of ${count} entries of stream "${stream}" group "${group}" failed: ${cause}. ` +
    'They stay pending and will be delivered again.',
  leaseLost: (id: string, stream: string, group: string) =>
    `Lost entry ${id} of stream "${stream}" group "${group}" to another consumer; ` +
    'this consumer will not ack or park it. Raise minIdleTimeMs if handlers are slower than it.',
  trimmedWhilePending: (id: string, stream: string, group: string) =>
    `Entry ${id} of stream "${stream}" was trimmed away while group "${group}" still had it pending. ` +
    'Trim with the safe trimmer (never below the oldest pending entry) to prevent this.',
  ackRejected: (id: string, stream: string, group: string) =>
    `Did not ack entry ${id} of stream "${stream}" group "${group}": another consumer reclaimed it ` +
    'while this one was handling it, so the new owner acks it. Raise minIdleTimeMs or keep leaseRenewal on.',
  groupDisappeared: (stream: string, group: string, cause: string, startId: string) =>
    `Stream "${stream}" or its group "${group}" disappeared (${cause}); ` +
    `re-creating the group at "${startId}" with MKSTREAM and reading on.`,
  oldClaimReadsMark: (stream: string, group: string, key: string) =>
    `Group "${group}" of stream "${stream}" carries the "claim-reads" mark of version 0.2's CLAIM reads, ` +
    `so every ack of it checks the owner (slower, still correct). Once no 0.2 consumer reads this group, ` +
    `remove it: MULTI, HDEL ${key} claim-reads, HINCRBY ${key} n 1, EXEC.`,
  readFailed: (stream: string, group: string, cause: string, delayMs: number) =>
    `Reading stream "${stream}" group "${group}" failed (${cause}); retrying in ${delayMs} ms.`,
  settleFailed: (id: string, stream: string, detail: unknown) =>
    `Unexpected failure settling entry ${id} of "${stream}": ${detail}`,
  failedAfterAck: (id: string, stream: string, group: string, cause: string) =>
    `Handler failed after it acknowledged entry ${id} of stream "${stream}" (group "${group}"): ` +
    `${cause}. The ack stands: the entry is neither retried nor dead-lettered.`,
  handlerFailed: (
    id: string,
    stream: string,
    group: string,
    consumer: string,
    deliveries: number,
    maxDeliveries: number,
    cause: string,
  ) =>
    `Handler failed for entry ${id} of stream "${stream}" (group "${group}", consumer ` +
    `"${consumer}", delivery ${deliveries}/${maxDeliveries}): ${cause}`,
  rescheduled: (id: string, stream: string, member: string, retryAt: number) =>
    `Entry ${id} of stream "${stream}" asked to be retried at ${timePhrase(retryAt)}: ` +
    `its copy waits in the stream's schedule as "${member}", the entry was acknowledged.`,
  blockKeyRequestHandler: (stream: string) =>
    `A @MessagePattern handler of stream "${stream}" has onDeadLetter: 'block-key': a request held behind a ` +
    "dead letter would outlive its caller's wait. Use it on @EventPattern handlers, or onDeadLetter: 'continue'.",
  blockKeyManualAck: (id: string, stream: string) =>
    `ctx.ack() called for entry ${id} of stream "${stream}" in a handler with onDeadLetter: 'block-key': refused. ` +
    'Its ack must release the next held entry of its key in the same step, which happens when the handler ' +
    'returns. Remove the ctx.ack() call: the entry is acknowledged when its handler returns.',
  keyBlockFailed: (id: string, stream: string, key: string, step: string, cause: string) =>
    `Could not ${step} of entry ${id} (stream "${stream}", ordering key "${key}"): ${cause}. ` +
    'The entry stays pending and runs again; its key keeps its order.',
  retryNotScheduled: (id: string, cause: string) => `Could not schedule the retry of entry ${id}: ${cause}`,
  deadLettered: (id: string, stream: string, group: string, dlq: string, deadLetterId: string, reason: string, cause?: string) =>
    `Entry ${id} of stream "${stream}" (group "${group}") moved to "${dlq}" as ${deadLetterId}: ${reason}` +
    (cause === undefined ? '.' : ` (${cause})`),
  deadLetterFailed: (id: string, stream: string, cause: string) =>
    `Could not dead-letter entry ${id} of stream "${stream}" (${cause}); it stays pending.`,
  releaseFailed: (count: number, cause: string) => `Could not hand back ${count} unfinished entries: ${cause}`,
  deliveredTooOften: (deliveries: number, maxDeliveries: number) =>
    `Delivered ${deliveries} times (maxDeliveries ${maxDeliveries}) without being acknowledged; ` +
    'the consumer may have crashed or hung while handling it.',
  skippedOtherGroup: (id: string, stream: string, detail: string) =>
    `Entry ${id} of stream "${stream}": ${detail}; acknowledged unhandled.`,
  listenerThrew: (event: string, id: string, detail: unknown) => `A "${event}" event listener threw for entry ${id}: ${detail}`,
  redrivenToOtherGroup: (targetGroup: string, group: string) => `re-driven to group "${targetGroup}", not "${group}"`,
  replyToRefused: (id: string, stream: string, replyTo: string, replyStreamPrefix: string) =>
    `request ${id} of stream "${stream}" names reply stream "${replyTo}", outside the reply prefix ` +
    `"${replyStreamPrefix}"; refused without running it. If a genuine client sent it, give the server ` +
    `replyStreamPrefix the client's keyPrefix + "${REPLY_STREAM_INFIX}".`,
  requestExpired: (id: string, stream: string, group: string, lateMs: number, deadline: number) =>
    `request ${id} of stream "${stream}" (group "${group}") read ${lateMs} ms after its deadline ` +
    `(${timePhrase(deadline)}); the caller was already told it timed out, so it was acknowledged ` +
    "without running it. Deadlines use the client host's clock: keep the hosts' clocks in sync.",
};
