// Fills streams with entries in the library's own envelope.
import type { Redis } from 'ioredis';
import { JsonCodec, encodeEnvelope } from 'nest-redis-streams';
import { PREFILL_BATCH } from '../settings.js';
import { respXadd } from './resp-xadd.js';

const codec = new JsonCodec();

/** A small, typical event payload. */
export const orderPlaced = (i: number) => ({ orderId: `ord-${i}`, sku: 'SKU-1042', quantity: 2, priceCents: 1999 });

const envelope = (i: number) => encodeEnvelope({ data: orderPlaced(i) }, codec);

/**
 * The fastest pipelined XADD this machine does (raw RESP); resolves with XADD/s. `extraFields`
 * are appended to every envelope (a marker another transport needs; this library ignores them).
 */
export function prefill(url: string, stream: string, count: number, extraFields: string[] = []): Promise<number> {
  const fields = extraFields.length === 0 ? envelope : (i: number) => [...envelope(i), ...extraFields];
  return respXadd(url, stream, count, fields, PREFILL_BATCH);
}

/**
 * The same entries through an ioredis pipeline, PREFILL_BATCH per pipeline with two in flight:
 * what an application would write by hand. Resolves with XADD/s.
 */
export async function ioredisPipelineXadd(redis: Redis, stream: string, count: number): Promise<number> {
  const started = performance.now();
  let inFlight: Promise<unknown> = Promise.resolve();
  for (let from = 0; from < count; from += PREFILL_BATCH) {
    const pipeline = redis.pipeline();
    for (let i = from; i < Math.min(count, from + PREFILL_BATCH); i++) pipeline.xadd(stream, '*', ...envelope(i));
    const sent = pipeline.exec().then(failOnError);
    await inFlight;
    inFlight = sent;
  }
  await inFlight;
  return (count * 1_000) / (performance.now() - started);
}

function failOnError(results: Array<[Error | null, unknown]> | null): void {
  const failed = results?.find(([err]) => err);
  if (failed) throw failed[0];
}
