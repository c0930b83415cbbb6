import type { Redis } from 'ioredis';
import { JsonCodec, encodeEnvelope } from 'nest-redis-streams';

/** An envelope entry whose `event_id` is the raw bytes given, written with a Buffer XADD. */
export async function addWithEventIdBytes(redis: Redis, stream: string, eventId: Buffer, data: unknown): Promise<string> {
  const fields = encodeEnvelope({ data, eventId: 'placeholder' }, new JsonCodec());
  const args = fields.map((f, i) => (fields[i - 1] === 'event_id' ? eventId : Buffer.from(f)));
  return (await redis.xaddBuffer(Buffer.from(stream), '*', ...args))!.toString();
}
