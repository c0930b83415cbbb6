/** Turns handler data into the string stored in the envelope's `data` field. */
export interface PayloadSerializer {
  serialize(data: unknown): string;
}

/** Turns the envelope's `data` field back into handler data; throw to mark it undecodable. */
export interface PayloadDeserializer {
  deserialize(raw: string): unknown;
}
