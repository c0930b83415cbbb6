import type { Redis } from 'ioredis';
import { JsonCodec, encodeEnvelope } from 'nest-redis-streams';
import { pendingCount, waitFor } from '../support/helpers.js';

/** An envelope entry whose `event_id` is the raw bytes given, written with a Buffer XADD. */
export async function addWithEventIdBytes(redis: Redis, stream: string, eventId: Buffer, data: unknown): Promise<string> {
  const fields = encodeEnvelope({ data, eventId: 'placeholder' }, new JsonCodec());
  const args = fields.map((f, i) => (fields[i - 1] === 'event_id' ? eventId : Buffer.from(f)));
  return (await redis.xaddBuffer(Buffer.from(stream), '*', ...args))!.toString();
}

/** Resolves once the group has read every entry of the stream and holds none pending. */
export async function allSettled(redis: Redis, stream: string, group: string, lastId: string): Promise<void> {
  await waitFor(async () => {
    const groups = (await redis.xinfo('GROUPS', stream)) as unknown[][];
    const info = groups.find((g) => g[g.indexOf('name') + 1] === group);
    const delivered = info?.[info.indexOf('last-delivered-id') + 1];
    return delivered === lastId && (await pendingCount(redis, stream, group)) === 0;
  }, `group "${group}" to read and settle every entry`);
}
