import { randomUUID } from 'node:crypto';
import { ENVELOPE } from '../constants.js';
import { UndecodableEntryError } from '../errors/undecodable-entry.error.js';
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
}

/** Builds the flat field list of an XADD in the envelope format. */
export function encodeEnvelope(message: OutgoingEnvelope, serializer: PayloadSerializer): string[] {
  const fields: string[] = [
    ENVELOPE.version, ENVELOPE.versionValue,
    ENVELOPE.eventId, message.eventId ?? randomUUID(),
    ENVELOPE.data, serializer.serialize(message.data),
    ENVELOPE.publishedAt, String(Date.now()),
  ];
  if (message.headers && Object.keys(message.headers).length > 0) {
    fields.push(ENVELOPE.headers, JSON.stringify(message.headers));
  }
  if (message.replyTo) fields.push(ENVELOPE.replyTo, message.replyTo);
  if (message.correlationId) fields.push(ENVELOPE.correlationId, message.correlationId);
  return fields;
}

/**
 * Reads an entry's fields. An entry in this library's envelope decodes to its data; any other
 * entry (redis-cli, another language) decodes to an object of its fields. Objects are built
 * with own properties only, so a field named `__proto__` cannot pollute prototypes.
 * @throws UndecodableEntryError when the envelope's data or headers cannot be read.
 */
export function decodeEntry(fields: string[], deserializer: PayloadDeserializer): DecodedEntry {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i], fields[i + 1]);
  if (map.get(ENVELOPE.version) !== ENVELOPE.versionValue) {
    return { data: Object.fromEntries(map), headers: {}, foreign: true, eventId: map.get(ENVELOPE.eventId) };
  }
  const raw = map.get(ENVELOPE.data);
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
  return {
    data,
    eventId: map.get(ENVELOPE.eventId),
    headers: decodeHeaders(map.get(ENVELOPE.headers)),
    replyTo: map.get(ENVELOPE.replyTo),
    correlationId: map.get(ENVELOPE.correlationId),
    foreign: false,
  };
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
  for (const [key, value] of Object.entries(parsed)) {
    Object.defineProperty(headers, key, { value: String(value), enumerable: true, writable: true, configurable: true });
  }
  return headers;
}
