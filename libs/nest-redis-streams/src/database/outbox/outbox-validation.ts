import { CLIENT_DEFAULTS } from '../../client/client.constants.js';
import { EntryEncoder } from '../../client/entry-encoder.js';
import { StreamRecord } from '../../client/stream-record.js';
import { JsonCodec } from '../../codec/json.codec.js';
import { InvalidOptionsError } from '../../errors/invalid-options.error.js';
import type { PayloadSerializer } from '../../interfaces/payload-codec.interface.js';
import { pgTextProblem } from '../pg-text.js';
import { OutboxEventRefusedError } from './errors/outbox-event-refused.error.js';

/** What `Outbox` checks events against: the options of the client the relay publishes through. */
export interface OutboxPublishLimits {
  readonly options: { readonly maxPayloadBytes: number; readonly serializer: PayloadSerializer };
}

/**
 * Most UTF-8 bytes of an event id or partition key: both are in btree indexes, whose entries
 * PostgreSQL caps at about 2,700 bytes (a longer one fails the INSERT and the caller's transaction).
 */
const MAX_KEY_BYTES = 1024;

/** `optional`: undefined passes, and so does '' (a key like any other, as before the checks). */
function checkText(field: string, value: unknown, fix: string, optional = false, maxBytes = Infinity): void {
  if (optional && value === undefined) return;
  if (typeof value !== 'string' || (value.length === 0 && !optional)) {
    throw new InvalidOptionsError(
      `Outbox ${field} ${JSON.stringify(value)} is not a${optional ? '' : ' non-empty'} string: ${fix}.`,
    );
  }
  const problem = pgTextProblem(value);
  if (problem) throw new InvalidOptionsError(`Outbox ${field} ${JSON.stringify(value)} ${problem}: ${fix}.`);
  const bytes = Buffer.byteLength(value, 'utf8');
  if (bytes > maxBytes) {
    throw new InvalidOptionsError(
      `Outbox ${field} "${value.slice(0, 20)}…" is ${bytes} bytes long, over the limit of ${maxBytes} (PostgreSQL indexes it, and fails the INSERT past about 2,700 bytes): shorten it (e.g. to a hash of it).`,
    );
  }
}

/**
 * Checks an event before any statement runs, so a bad one never aborts the caller's transaction:
 * each field (stream, eventId, partitionKey, headers) as PostgreSQL will store it, then the whole
 * entry through the client's own encoder (its serializer and `maxPayloadBytes`), so the relay is
 * never handed an event it must refuse. Resolves with the payload's JSON for the `json` column.
 */
export function validateOutboxEvent(
  encoder: EntryEncoder,
  stream: string,
  payload: unknown,
  options: { eventId: string; headers?: Record<string, string>; partitionKey?: string },
): string {
  checkText('stream', stream, 'pass the stream (pattern) to publish to, without NUL characters');
  const idFix = 'pass a stable id of printable UTF-8 text (e.g. "order-42-placed") or leave it out';
  checkText('eventId', options.eventId, idFix, false, MAX_KEY_BYTES);
  const keyFix = 'pass a key of UTF-8 text without NUL characters, or leave it out';
  checkText('partitionKey', options.partitionKey, keyFix, true, MAX_KEY_BYTES);
  if (options.headers !== undefined && (typeof options.headers !== 'object' || options.headers === null)) {
    throw new InvalidOptionsError(`Outbox headers ${JSON.stringify(options.headers)} are not an object: pass { name: 'value' }.`);
  }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    const nameProblem = pgTextProblem(name);
    if (nameProblem) throw new InvalidOptionsError(`Outbox header name ${JSON.stringify(name)} ${nameProblem}: rename it.`);
    if (typeof value !== 'string') {
      throw new InvalidOptionsError(
        `Outbox header "${name}" is ${typeof value}, not a string: headers travel as strings; convert it.`,
      );
    }
    const problem = pgTextProblem(value);
    if (problem) {
      throw new InvalidOptionsError(
        `Outbox header "${name}" value ${JSON.stringify(value)} ${problem}: encode it (e.g. base64) or leave it out.`,
      );
    }
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(payload);
  } catch (err) {
    // A BigInt, a circular reference or a throwing toJSON: refused here, before any statement.
    throw new InvalidOptionsError(
      `Outbox payload for stream "${stream}" cannot be written as JSON (${(err as Error).message.replace(/\s*\n\s*/g, ' ')}): pass plain data (BigInt as a string, no circular references).`,
      { cause: err },
    );
  }
  if (json === undefined) {
    throw new InvalidOptionsError(
      `Outbox payload for stream "${stream}" is ${typeof payload}, which JSON cannot hold: pass an object, array, string, number, boolean or null.`,
    );
  }
  // The relay publishes the payload as PostgreSQL gives it back: JSON.parse of what is stored.
  const record = new StreamRecord(JSON.parse(json), options);
  try {
    encoder.encode({ pattern: stream, data: record }, stream);
  } catch (err) {
    throw new OutboxEventRefusedError(
      `Outbox event "${options.eventId}" for stream "${stream}" was not added, since the relay's client would refuse it: ${(err as Error).message.replace(/;? nothing was written\./, '.')} The transaction is still usable.`,
      stream,
      options.eventId,
      { cause: err },
    );
  }
  return json;
}

/** The encoder of `limits` (the library's client defaults without one). */
export function outboxEncoder(limits: OutboxPublishLimits | undefined): EntryEncoder {
  return limits
    ? new EntryEncoder(limits.options.serializer, limits.options.maxPayloadBytes)
    : new EntryEncoder(new JsonCodec(), CLIENT_DEFAULTS.maxPayloadBytes);
}
