import type { PayloadDeserializer, PayloadSerializer } from '../interfaces/payload-codec.interface.js';

/** Field names of a reply entry written to a client's reply stream. */
export const REPLY = {
  correlationId: 'correlation_id',
  response: 'response',
  error: 'err',
  disposed: 'disposed',
} as const;

/** One packet of a response stream (Nest's WritePacket, with the request's correlation id). */
export interface ReplyPacket {
  correlationId: string;
  response?: unknown;
  err?: unknown;
  isDisposed?: boolean;
}

export function encodeReply(packet: ReplyPacket, serializer: PayloadSerializer): string[] {
  const fields: string[] = [REPLY.correlationId, packet.correlationId];
  if (packet.err !== undefined) fields.push(REPLY.error, serializer.serialize(serializableError(packet.err)));
  else if (packet.response !== undefined) fields.push(REPLY.response, serializer.serialize(packet.response));
  if (packet.isDisposed) fields.push(REPLY.disposed, '1');
  return fields;
}

export function decodeReply(fields: string[], deserializer: PayloadDeserializer): ReplyPacket {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i], fields[i + 1]);
  const packet: ReplyPacket = { correlationId: map.get(REPLY.correlationId) ?? '' };
  const err = map.get(REPLY.error);
  const response = map.get(REPLY.response);
  if (err !== undefined) packet.err = deserializer.deserialize(err);
  if (response !== undefined) packet.response = deserializer.deserialize(response);
  if (map.get(REPLY.disposed) === '1') packet.isDisposed = true;
  return packet;
}

/** Errors do not survive JSON.stringify (their fields are not enumerable). */
function serializableError(err: unknown): unknown {
  if (err instanceof Error) return { name: err.name, message: err.message };
  return err;
}
