import { DeadLetterReason } from '../dead-letter-reason.js';

export { DeadLetterReason };

/** Metadata fields added to a dead-letter entry, beside the original fields. */
export const DLQ_FIELDS = {
  reason: 'dlq:reason',
  stream: 'dlq:stream',
  id: 'dlq:id',
  group: 'dlq:group',
  consumer: 'dlq:consumer',
  error: 'dlq:error',
  errorClass: 'dlq:error_class',
  deliveries: 'dlq:deliveries',
  time: 'dlq:time',
  lostCount: 'dlq:lost_count',
} as const;

const DLQ_PREFIX = 'dlq:';
/** Put before an original field name that could be taken for metadata (or for an escaped name). */
const ESCAPE_PREFIX = 'orig:';

/** What goes with an entry into the dead-letter stream. */
export interface DeadLetterDetails {
  reason: DeadLetterReason;
  stream: string;
  id: string;
  group: string;
  consumer: string;
  deliveries: number;
  error?: unknown;
}

/** The metadata fields of a dead-letter entry; the original fields follow them. */
export function deadLetterMetadata(details: DeadLetterDetails): string[] {
  const { message, errorClass } = describeError(details.error);
  return [
    DLQ_FIELDS.reason,
    details.reason,
    DLQ_FIELDS.stream,
    details.stream,
    DLQ_FIELDS.id,
    details.id,
    DLQ_FIELDS.group,
    details.group,
    DLQ_FIELDS.consumer,
    details.consumer,
    DLQ_FIELDS.error,
    message,
    DLQ_FIELDS.errorClass,
    errorClass,
    DLQ_FIELDS.deliveries,
    String(details.deliveries),
    DLQ_FIELDS.time,
    String(Date.now()),
  ];
}

/**
 * An original field name as stored in a dead letter. Names starting with `dlq:` (metadata) or
 * `orig:` (the escape itself) get `orig:` put in front, so that unescaping strips exactly one and
 * every name comes back unchanged. The park script in redis/lua does the same inside Redis.
 */
export function escapeOriginalName(name: string): string {
  return name.startsWith(DLQ_PREFIX) || name.startsWith(ESCAPE_PREFIX) ? `${ESCAPE_PREFIX}${name}` : name;
}

/** Original field names in their dead-letter form (the park script's fallback payload). */
export function escapedOriginalFields(original: string[] | null): string[] {
  const fields: string[] = [];
  if (!original) return fields;
  for (let i = 0; i + 1 < original.length; i += 2) fields.push(escapeOriginalName(original[i]), original[i + 1]);
  return fields;
}

/** Builds a dead-letter entry in memory: metadata first, then the original fields unchanged. */
export function deadLetterFields(details: DeadLetterDetails, original: string[] | null): string[] {
  return [...deadLetterMetadata(details), ...escapedOriginalFields(original)];
}

/** Splits a dead-letter entry back into its metadata and the original fields (for re-drive). */
export function splitDeadLetterFields(fields: string[]): { meta: Record<string, string>; original: string[] } {
  const meta: Record<string, string> = {};
  const original: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [name, value] = [fields[i], fields[i + 1]];
    if (name.startsWith(DLQ_PREFIX)) meta[name.slice(DLQ_PREFIX.length)] = value;
    else original.push(name.startsWith(ESCAPE_PREFIX) ? name.slice(ESCAPE_PREFIX.length) : name, value);
  }
  return { meta, original };
}

/** The same split over raw bytes (`xrangeBuffer`), for payloads that are not UTF-8 text. */
export function splitDeadLetterBuffers(fields: Buffer[]): {
  meta: Record<string, string>;
  original: Array<[name: Buffer, value: Buffer]>;
} {
  const meta: Record<string, string> = {};
  const original: Array<[Buffer, Buffer]> = [];
  const dlq = Buffer.from(DLQ_PREFIX);
  const escape = Buffer.from(ESCAPE_PREFIX);
  const startsWith = (name: Buffer, prefix: Buffer) =>
    name.length >= prefix.length && name.subarray(0, prefix.length).equals(prefix);
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [name, value] = [fields[i], fields[i + 1]];
    if (startsWith(name, dlq)) meta[name.subarray(dlq.length).toString()] = value.toString();
    else original.push([startsWith(name, escape) ? name.subarray(escape.length) : name, value]);
  }
  return { meta, original };
}

/**
 * Message and class of whatever a handler threw. Nest's RPC exception filters turn errors into
 * plain objects (`{ status, message }`), so both shapes are read.
 */
export function describeError(error: unknown): { message: string; errorClass: string } {
  if (error === undefined || error === null) return { message: '', errorClass: '' };
  if (error instanceof Error) return { message: error.message, errorClass: error.name || error.constructor.name };
  if (typeof error === 'object') {
    const { message, name } = error as { message?: unknown; name?: unknown };
    return {
      message: typeof message === 'string' ? message : safeJson(error),
      errorClass: typeof name === 'string' ? name : '',
    };
  }
  return { message: String(error), errorClass: typeof error };
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
