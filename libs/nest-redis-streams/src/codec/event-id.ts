import { ENVELOPE } from '../constants.js';
import { InvalidEventIdError } from '../errors/invalid-event-id.error.js';
import { UndecodableEventIdError } from '../errors/undecodable-event-id.error.js';

// ioredis decodes every reply as UTF-8 and puts U+FFFD in place of each byte sequence that is not
// UTF-8, so the ids ff and fe both read as "\uFFFD". Reading the hot path as Buffers would keep
// them apart at a cost per entry; instead, this library's producers refuse U+FFFD and lone
// surrogates (which UTF-8 encoding also turns into U+FFFD), and a U+FFFD that a consumer reads can
// then only stand for bytes that were not text: it refuses the entry.
const REPLACEMENT = '\uFFFD';
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const FIX = 'Use text that names the event (an order id and a step); encode a binary id as hex or base64.';

/**
 * What is wrong with `eventId` as a producer's event id, or null when consumers can tell it from
 * every other id: a non-empty string of well-formed text (no lone UTF-16 surrogate) without U+FFFD.
 */
export function eventIdProblem(eventId: unknown): string | null {
  if (typeof eventId !== 'string') return `is ${eventId === null ? 'null' : `a ${typeof eventId}`}, not a string`;
  if (eventId.length === 0) return 'is empty';
  if (LONE_SURROGATE.test(eventId)) {
    return 'is not well-formed text (a lone UTF-16 surrogate, which would be stored as U+FFFD)';
  }
  if (eventId.includes(REPLACEMENT)) {
    return 'contains U+FFFD, which consumers read in place of bytes that are not UTF-8 and refuse';
  }
  return null;
}

/**
 * Throws unless `eventId` is a usable event id (see `eventIdProblem`). `where` names the value in
 * the message, e.g. 'The eventId of the entry for stream "orders"'.
 * @throws InvalidEventIdError naming the value, what is wrong and the fix.
 */
export function assertEventId(eventId: unknown, where = 'The eventId'): asserts eventId is string {
  const problem = eventIdProblem(eventId);
  if (problem !== null) throw new InvalidEventIdError(`${where} (${shownEventId(eventId)}) ${problem}. ${FIX}`, eventId);
}

/**
 * Consumer side: refuses an `event_id` read with U+FFFD in it (bytes that were not UTF-8), which
 * would share its idempotency key with other such ids.
 * @throws UndecodableEventIdError, which parks the entry as `undecodable-event-id`.
 */
export function checkReadEventId(eventId: string | undefined): void {
  if (eventId === undefined || !eventId.includes(REPLACEMENT)) return;
  throw new UndecodableEventIdError(
    `The "${ENVELOPE.eventId}" field is not UTF-8 text (read as ${shownEventId(eventId)}, U+FFFD standing for ` +
      'each byte sequence that is not UTF-8), so it cannot be told apart from other such ids and is not used as ' +
      'an idempotency key; the entry was not run. Its bytes are kept in the dead letter ' +
      `(DeadLetterService.inspectBytes). Fix the producer: ${FIX}`,
  );
}

/**
 * An event id for messages and terminals: JSON-quoted, so control characters and lone surrogates
 * show as escapes, with U+FFFD escaped too (it looks like an ordinary character), cut at 80.
 */
export function shownEventId(eventId: unknown): string {
  if (typeof eventId !== 'string') return String(eventId);
  const cut = eventId.length > 80 ? `${eventId.slice(0, 79)}…` : eventId;
  return JSON.stringify(cut).replace(/\uFFFD/g, '\\ufffd');
}
