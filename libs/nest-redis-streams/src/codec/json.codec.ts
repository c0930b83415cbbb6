import type { PayloadDeserializer, PayloadSerializer } from '../interfaces/payload-codec.interface.js';

/** The default payload format: JSON, readable from redis-cli and any language. */
export class JsonCodec implements PayloadSerializer, PayloadDeserializer {
  serialize(data: unknown): string {
    // undefined would vanish from JSON.stringify's output; null keeps the field decodable.
    return JSON.stringify(data === undefined ? null : data);
  }

  deserialize(raw: string): unknown {
    return JSON.parse(raw);
  }
}
