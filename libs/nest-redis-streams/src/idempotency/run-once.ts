import type { RedisStreamsContext } from '../context/redis-streams.context.js';
import { EventInProgressError } from '../errors/event-in-progress.error.js';
import { IDEMPOTENCY_DEFAULTS } from './idempotency.constants.js';
import type { IdempotencyOptions } from './idempotency-options.interface.js';
import type { IdempotencyStore } from './idempotency-store.interface.js';

/**
 * Dedup key of an entry for its group: the business event id when the producer gave one (it
 * survives a re-publish), else the stream and entry id (foreign entries).
 */
export function idempotencyKey(ctx: RedisStreamsContext): string {
  const event = ctx.getEventId() ?? `${ctx.getStream()}/${ctx.getEntryId()}`;
  return `${ctx.getGroup()}:${event}`;
}

/**
 * Runs `effect` at most once per business event and group. A redelivered copy of an event whose
 * effect completed resolves with `undefined` without running it, so the transport simply acks it.
 */
export async function runOnce<T>(
  store: IdempotencyStore,
  ctx: RedisStreamsContext,
  effect: () => Promise<T>,
  options: IdempotencyOptions = {},
): Promise<T | undefined> {
  const { processingTtlMs, doneTtlMs } = { ...IDEMPOTENCY_DEFAULTS, ...options };
  const key = idempotencyKey(ctx);
  const state = await store.begin(key, processingTtlMs);
  if (state === 'done') return undefined;
  if (state === 'busy') {
    throw new EventInProgressError(
      `Event "${key}" is being handled by another delivery (claim held up to ${processingTtlMs} ms); it will be retried.`,
    );
  }
  let result: T;
  try {
    result = await effect();
  } catch (err) {
    await store.release(key);
    throw err;
  }
  await store.complete(key, doneTtlMs);
  return result;
}
