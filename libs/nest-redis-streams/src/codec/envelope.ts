import { randomUUID } from 'node:crypto';
import { ENVELOPE } from '../constants.js';
import { UndecodableEntryError } from '../errors/undecodable-entry.error.js';
import { assertEventId, checkReadEventId } from './event-id.js';
import type { PayloadDeserializer, PayloadSerializer } from '../interfaces/payload-codec.interface.js';

/** What a handler receives of one stream entry. */
export interface DecodedEntry {
  data: unknown;
  /** Business event id (the idempotency key); undefined for foreign entries without one. */
  eventId?: string;
  headers: Record<string, string>;
  /** Set when a client sent a request and waits for the reply on this stream. */
  replyTo?: string;
  correlationId?: string;
  /** True when the entry was not written in this library's envelope. */
  foreign: boolean;
}

/** What a producer puts into one entry. */
export interface OutgoingEnvelope {
  data: unknown;
  eventId?: string;
  headers?: Record<string, string>;
  replyTo?: string;
  correlationId?: string;
  /** A request's deadline (ms since epoch): a server does not run it after that. */
  deadline?: number;
}

/**
 * Builds the flat field list of an XADD in the envelope format.
 * @throws InvalidEventIdError when `message.eventId` is not a usable event id (see `eventIdProblem`).
 */
export function encodeEnvelope(message: OutgoingEnvelope, serializer: PayloadSerializer): string[] {
  const { eventId } = message;
  // Left out (undefined or null, as `??` reads it): a fresh UUID.
  if (eventId != null) assertEventId(eventId);
  const fields: string[] = [
    ENVELOPE.version,
    ENVELOPE.versionValue,
    ENVELOPE.eventId,
    eventId ?? randomUUID(),
    ENVELOPE.data,
    serializer.serialize(message.data),
    ENVELOPE.publishedAt,
    String(Date.now()),
  ];
  if (message.headers && Object.keys(message.headers).length > 0) {
    fields.push(ENVELOPE.headers, JSON.stringify(message.headers));
  }
  if (message.replyTo) fields.push(ENVELOPE.replyTo, message.replyTo);
  if (message.correlationId) fields.push(ENVELOPE.correlationId, message.correlationId);
  if (message.deadline !== undefined) fields.push(ENVELOPE.deadline, String(message.deadline));
  return fields;
}

/**
 * The transport's fields of an entry, found in one pass and not yet decoded: what the server must
 * check before it decodes (and perhaps parks) an entry or runs its handler.
 */
export interface ScannedEntry {
  /** True when the entry is not in this library's envelope (its fields are the data). */
  foreign: boolean;
  /** The group a re-drive addressed it to (any entry, foreign ones too); undefined for all groups. */
  targetGroup?: string;
  /** Envelope only: a request's deadline in ms since epoch (NaN when unreadable). */
  deadline?: number;
  replyTo?: string;
  correlationId?: string;
  eventId?: string;
  raw?: string;
  headers?: string;
}

/** A ScannedEntry with every field present, so filling it never changes its shape. */
export function emptyScan(): ScannedEntry {
  const none = undefined;
  return {
    foreign: false,
    targetGroup: none,
    eventId: none,
    raw: none,
    headers: none,
    replyTo: none,
    correlationId: none,
    deadline: none,
  };
}

/**
 * One pass over the flat field list, without an intermediate Map: this runs for every entry.
 * `into` is filled instead of a new object when given: the server scans every entry it reads
 * into one object of its own, used and done with before the next entry is scanned.
 */
export function scanEntry(fields: string[], into?: ScannedEntry): ScannedEntry {
  let version: string | undefined;
  let raw: string | undefined;
  let eventId: string | undefined;
  let headers: string | undefined;
  let replyTo: string | undefined;
  let correlationId: string | undefined;
  let deadline: string | undefined;
  let targetGroup: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const value = fields[i + 1];
    switch (fields[i]) {
      case ENVELOPE.version:
        version = value;
        break;
      case ENVELOPE.data:
        raw = value;
        break;
      case ENVELOPE.eventId:
        eventId = value;
        break;
      case ENVELOPE.headers:
        headers = value;
        break;
      case ENVELOPE.replyTo:
        replyTo = value;
        break;
      case ENVELOPE.correlationId:
        correlationId = value;
        break;
      case ENVELOPE.deadline:
        deadline = value;
        break;
      case ENVELOPE.targetGroup:
        targetGroup = value;
        break;
    }
  }
  // A foreign entry's fields are its own: only the re-drive's target group (a reserved name) and
  // its event id (the idempotency key, as before) are read from it.
  if (version !== ENVELOPE.versionValue) {
    if (!into) return { foreign: true, targetGroup, eventId };
    raw = headers = replyTo = correlationId = deadline = undefined;
  }
  const scan = into ?? ({} as ScannedEntry);
  scan.foreign = version !== ENVELOPE.versionValue;
  scan.targetGroup = targetGroup;
  scan.eventId = eventId;
  scan.raw = raw;
  scan.headers = headers;
  scan.replyTo = replyTo;
  scan.correlationId = correlationId;
  scan.deadline = deadline === undefined ? undefined : Number(deadline);
  return scan;
}

/**
 * Reads an entry's fields. An entry in this library's envelope decodes to its data; any other
 * entry (redis-cli, another language) decodes to an object of its fields. Objects are built
 * with own properties only, so a field named `__proto__` cannot pollute prototypes.
 * @throws UndecodableEntryError when the envelope's data or headers cannot be read;
 *   UndecodableEventIdError when the event id is not UTF-8 (foreign entries too).
 */
export function decodeEntry(fields: string[], deserializer: PayloadDeserializer): DecodedEntry {
  return decodeScanned(scanEntry(fields), fields, deserializer);
}

/** `decodeEntry` for fields already scanned (the server checks the scan before decoding). */
export function decodeScanned(scan: ScannedEntry, fields: string[], deserializer: PayloadDeserializer): DecodedEntry {
  const { raw, eventId, replyTo, correlationId } = scan;
  checkReadEventId(eventId);
  if (scan.foreign) return { data: foreignFields(fields), headers: {}, foreign: true, eventId };
  if (raw === undefined) {
    throw new UndecodableEntryError(`Envelope ${ENVELOPE.versionValue} has no "${ENVELOPE.data}" field.`);
  }
  let data: unknown;
  try {
    data = deserializer.deserialize(raw);
  } catch (err) {
    throw new UndecodableEntryError(
      `The "${ENVELOPE.data}" field could not be deserialized (${(err as Error).message}); ` +
        `first bytes: ${JSON.stringify(raw.slice(0, 80))}. Check the producer's serializer.`,
    );
  }
  return { data, eventId, headers: decodeHeaders(scan.headers), replyTo, correlationId, foreign: false };
}

/** The fields the transport adds to any entry (re-drive, held behind a blocked key): never shown as the producer's data. */
const TRANSPORT_FIELDS = new Set<string>([
  ENVELOPE.targetGroup,
  ENVELOPE.redrivenFrom,
  ENVELOPE.originalId,
  ENVELOPE.heldFrom,
  ENVELOPE.blockedKey,
]);

/**
 * A foreign entry's fields as own properties (a later duplicate field wins, as in a Map). The
 * re-drive's fields (target group, lineage) are the transport's, not the producer's: they are left out.
 */
function foreignFields(fields: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (TRANSPORT_FIELDS.has(fields[i])) continue;
    Object.defineProperty(out, fields[i], { value: fields[i + 1], enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function decodeHeaders(raw: string | undefined): Record<string, string> {
  if (raw === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    throw new UndecodableEntryError(`The "${ENVELOPE.headers}" field is not JSON (${(err as Error).message}).`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new UndecodableEntryError(`The "${ENVELOPE.headers}" field must be a JSON object of strings.`);
  }
  const headers: Record<string, string> = {};
  // Object.entries' keys without its array of pairs per entry (hasOwn: an enumerable property
  // someone added to Object.prototype must not become a header).
  for (const key in parsed) {
    if (!Object.hasOwn(parsed, key)) continue;
    const value = String((parsed as Record<string, unknown>)[key]);
    Object.defineProperty(headers, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return headers;
}
