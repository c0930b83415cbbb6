/** Why an entry was parked in the dead-letter stream. */
export enum DeadLetterReason {
  /** Failed on every one of `maxDeliveries` deliveries. */
  MAX_DELIVERIES = 'max-deliveries',
  /** The handler threw NonRetryableError. */
  NON_RETRYABLE = 'non-retryable',
  /** The fields could not be decoded; no retry can fix that. */
  UNDECODABLE = 'undecodable',
  /** Tombstone: the entry was still pending but trimming had deleted its payload. */
  PAYLOAD_TRIMMED = 'payload-trimmed',
  /** Tombstone for entries trimmed before the group read them at all (`dlq:lost_count` of them). */
  TRIMMED_UNDELIVERED = 'trimmed-undelivered',
}

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

/** Builds the dead-letter entry: metadata first, then the original fields unchanged. */
export function deadLetterFields(details: DeadLetterDetails, original: string[] | null): string[] {
  const { message, errorClass } = describeError(details.error);
  const fields = [
    DLQ_FIELDS.reason, details.reason,
    DLQ_FIELDS.stream, details.stream,
    DLQ_FIELDS.id, details.id,
    DLQ_FIELDS.group, details.group,
    DLQ_FIELDS.consumer, details.consumer,
    DLQ_FIELDS.error, message,
    DLQ_FIELDS.errorClass, errorClass,
    DLQ_FIELDS.deliveries, String(details.deliveries),
    DLQ_FIELDS.time, String(Date.now()),
  ];
  if (original) {
    for (let i = 0; i + 1 < original.length; i += 2) {
      // A foreign field that already carries the prefix would be taken for metadata on re-drive.
      const name = original[i].startsWith(DLQ_PREFIX) ? `orig:${original[i]}` : original[i];
      fields.push(name, original[i + 1]);
    }
  }
  return fields;
}

/** Splits a dead-letter entry back into its metadata and the original fields (for re-drive). */
export function splitDeadLetterFields(fields: string[]): { meta: Record<string, string>; original: string[] } {
  const meta: Record<string, string> = {};
  const original: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [name, value] = [fields[i], fields[i + 1]];
    if (name.startsWith(DLQ_PREFIX)) meta[name.slice(DLQ_PREFIX.length)] = value;
    else original.push(name.startsWith(`orig:${DLQ_PREFIX}`) ? name.slice(5) : name, value);
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
