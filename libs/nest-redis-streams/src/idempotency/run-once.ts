import type { RedisStreamsContext } from '../context/redis-streams.context.js';
import { EventInProgressError } from '../errors/event-in-progress.error.js';
import { IDEMPOTENCY_DEFAULTS } from './idempotency.constants.js';
import type { IdempotencyOptions } from './idempotency-options.interface.js';
import type { IdempotencyStore } from './idempotency-store.interface.js';

// `|` separates the parts of a key; stream and group names may contain anything, so `%` and `|`
// are escaped and no two (stream, group, handler, event) tuples can share a key.
const escapePart = (part: string) => part.replace(/%/g, '%25').replace(/\|/g, '%7C');

/**
 * Dedup key of an entry: `<stream>|<group>|<handler>|<event>`. The event is the business event
 * id when the producer gave one (it survives a re-publish), else `entry:<entry id>` (foreign
 * entries). Stream and handler are part of it because an event id is only unique within what
 * one producer writes to one stream, and the default group `nest` is shared by every handler.
 */
export function idempotencyKey(ctx: RedisStreamsContext, handler: string = IDEMPOTENCY_DEFAULTS.handler): string {
  const event = ctx.getEventId() ?? `entry:${ctx.getEntryId()}`;
  return [ctx.getStream(), ctx.getGroup(), handler, event].map(escapePart).join('|');
}

/**
 * The key earlier versions used (`<group>:<event>`): read, never written, so that events they
 * completed stay done across an upgrade (`IdempotencyOptions.legacyKeys`).
 */
export function legacyIdempotencyKey(ctx: RedisStreamsContext): string {
  return `${ctx.getGroup()}:${ctx.getEventId() ?? `${ctx.getStream()}/${ctx.getEntryId()}`}`;
}

/**
 * Runs `effect` at most once per business event, stream, group and handler (`options.handler`).
 * A redelivered copy of an event whose effect completed resolves with `undefined` without
 * running it, so the transport simply acks it.
 */
export async function runOnce<T>(
  store: IdempotencyStore,
  ctx: RedisStreamsContext,
  effect: () => Promise<T>,
  options: IdempotencyOptions = {},
): Promise<T | undefined> {
  const { handler, processingTtlMs, doneTtlMs, legacyKeys } = { ...IDEMPOTENCY_DEFAULTS, ...stripUndefined(options) };
  const key = idempotencyKey(ctx, handler);
  const state = await store.begin(key, processingTtlMs);
  if (state === 'done') return undefined;
  if (state === 'busy') {
    throw new EventInProgressError(
      `Event "${key}" is being handled by another delivery (claim held up to ${processingTtlMs} ms); it will be retried.`,
    );
  }
  let result: T;
  try {
    if (legacyKeys && store.isDone && (await store.isDone(legacyIdempotencyKey(ctx)))) {
      // Completed before the upgrade: carry the marker over to the new key and skip the effect.
      await store.complete(key, doneTtlMs);
      return undefined;
    }
    result = await effect();
  } catch (err) {
    await store.release(key);
    throw err;
  }
  await store.complete(key, doneTtlMs);
  return result;
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
