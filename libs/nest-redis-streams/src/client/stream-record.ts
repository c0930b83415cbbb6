import type { ReadPacket } from '@nestjs/microservices';
import type { OutgoingEnvelope } from '../codec/envelope.js';
import type { DeliveryTime } from '../errors/invalid-delay.error.js';
import { activeTraceHeaders } from '../tracing/trace-context.js';

/** Envelope fields a producer may set besides the data. */
export interface StreamRecordOptions extends DeliveryTime {
  /**
   * Business event id, the consumers' idempotency key. Set it to something stable (an order id and
   * a step) so a re-published event is recognised as the same one.
   * @default a random UUID
   */
  eventId?: string;
  /** Headers for the consumer (`ctx.getHeaders()`): trace context, tenant... */
  headers?: Record<string, string>;
  /**
   * Picks the partition of a partitioned pattern (client option `partitions`): entries with the
   * same key go to the same partition, so a handler with `orderingKey` sees them in order.
   */
  partitionKey?: string;
}

/**
 * Data plus envelope fields for `emit()`/`send()`:
 * `client.emit('orders', new StreamRecord(order, { eventId: order.id, headers }))`.
 * Any other value is sent as the data itself.
 */
export class StreamRecord<T = unknown> {
  readonly eventId?: string;
  readonly headers: Record<string, string>;
  readonly partitionKey?: string;
  /** When to deliver it (`emit()` only): held in the stream's schedule until then. */
  readonly delivery?: DeliveryTime;

  constructor(
    /** What the handler receives as its payload. */
    readonly data: T,
    options: StreamRecordOptions = {},
  ) {
    this.eventId = options.eventId;
    this.partitionKey = options.partitionKey;
    this.headers = { ...options.headers };
    if (options.delayMs !== undefined || options.deliverAt !== undefined) {
      this.delivery = { delayMs: options.delayMs, deliverAt: options.deliverAt };
    }
  }

  /** This record delivered at `delivery` instead (emit()'s third argument). */
  withDelivery(delivery: DeliveryTime): StreamRecord<T> {
    const { eventId, headers, partitionKey } = this;
    return new StreamRecord(this.data, { eventId, headers, partitionKey, ...delivery });
  }
}

/**
 * The envelope of a Nest packet: a StreamRecord's fields, with the packet's metadata (set by a
 * dispatch hook, e.g. trace context) as headers under the record's own headers.
 */
export function envelopeOf(packet: ReadPacket): OutgoingEnvelope {
  const record = packet.data instanceof StreamRecord ? packet.data : null;
  const trace = activeTraceHeaders();
  const metadata = packet.metadata;
  const own = record?.headers;
  // Most entries carry no header at all: then no merged object is built for them.
  const headers =
    isEmpty(trace) && isEmpty(metadata) && isEmpty(own)
      ? undefined
      : // The active trace context first, so explicit metadata and record headers can override it.
        { ...trace, ...metadata, ...own };
  return { data: record ? record.data : packet.data, eventId: record?.eventId, headers };
}

function isEmpty(headers: object | undefined): boolean {
  if (!headers) return true;
  for (const _ in headers) return false;
  return true;
}
