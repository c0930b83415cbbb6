import type { ReadPacket } from '@nestjs/microservices';
import { encodeEnvelope } from '../codec/envelope.js';
import { assertEventId } from '../codec/event-id.js';
import { InvalidEventIdError } from '../errors/invalid-event-id.error.js';
import type { PayloadSerializer } from '../interfaces/payload-codec.interface.js';
import { CLIENT_MESSAGES } from './client.messages.js';
import { PayloadTooLargeError } from './errors/payload-too-large.error.js';
import { PublishFailedError } from './errors/publish-failed.error.js';
import { StreamRecord, envelopeOf } from './stream-record.js';

/** What a request adds to its entry: where to answer, and until when it is worth running. */
export interface RequestFields {
  replyTo: string;
  correlationId: string;
  deadline: number;
}

/** Turns a Nest packet into the envelope fields of one XADD, within `maxPayloadBytes`. */
export class EntryEncoder {
  constructor(
    private readonly serializer: PayloadSerializer,
    private readonly maxPayloadBytes: number,
  ) {}

  /**
   * The envelope fields of `packet` for `stream`.
   * @throws PublishFailedError when the serializer fails, PayloadTooLargeError over the limit,
   *   InvalidEventIdError for an event id consumers could not keep apart; all say that nothing was written.
   */
  encode(packet: ReadPacket, stream: string, request?: RequestFields): string[] {
    if (request && packet.data instanceof StreamRecord && packet.data.delivery) {
      throw new PublishFailedError(CLIENT_MESSAGES.scheduleInRequest(stream), stream, false);
    }
    let fields: string[];
    try {
      const envelope = envelopeOf(packet);
      const { eventId } = envelope;
      if (eventId != null) assertEventId(eventId, CLIENT_MESSAGES.eventIdOf(stream));
      fields = encodeEnvelope(request ? { ...envelope, ...request } : envelope, this.serializer);
    } catch (err) {
      if (err instanceof InvalidEventIdError) throw err;
      throw new PublishFailedError(CLIENT_MESSAGES.serializeFailed(stream, (err as Error).message), stream, false, {
        cause: err,
      });
    }
    this.checkSize(fields, stream);
    return fields;
  }

  private checkSize(fields: string[], stream: string): void {
    let units = 0;
    for (const field of fields) units += field.length;
    // UTF-8 takes at most 3 bytes per UTF-16 unit: a typical entry is far enough below the limit
    // that its exact size (a Buffer.byteLength per field) need not be counted.
    if (units * 3 <= this.maxPayloadBytes) return;
    let bytes = 0;
    for (const field of fields) bytes += Buffer.byteLength(field);
    if (bytes > this.maxPayloadBytes) {
      throw new PayloadTooLargeError(CLIENT_MESSAGES.payloadTooLarge(stream, bytes, this.maxPayloadBytes), stream, bytes);
    }
  }
}
