import { Controller } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import type { Redis } from 'ioredis';
import { NonRetryableError, RetryLater, type StreamHandlerOptions } from 'nest-redis-streams';
import { blockedKeysKey, heldEntriesKey } from '../../libs/nest-redis-streams/src/keys/index.js';
import { pendingCount, startMicroservice, waitFor } from '../support/helpers.js';

/** One key's block as the engine stores it (see keys/blocked-key-keys.ts). */
export interface StoredBlock {
  entry: string;
  state: 'failing' | 'parked' | 'releasing';
  deadLetter: string;
  deadLetterStream: string;
  since: number;
  current: string;
}

/** The block of `key`, read straight from Redis (the read API is another module's). */
export async function blockOf(redis: Redis, stream: string, key: string, group = 'nest'): Promise<StoredBlock | null> {
  const raw = await redis.hget(blockedKeysKey(stream, group), key);
  return raw === null ? null : (JSON.parse(raw) as StoredBlock);
}

/** How many entries of `key` wait behind its block. */
export function waiting(redis: Redis, stream: string, key: string, group = 'nest'): Promise<number> {
  return redis.xlen(heldEntriesKey(stream, group, key));
}

/**
 * A block-key consumer of foreign entries `{ k, n }`: records `k:n` of every run that succeeded,
 * in order, and fails the runs `failures` says to (by `k:n`, a count of failures still to come;
 * an entry with a field `later` throws `RetryLater(later)` instead, one with `fatal` a
 * NonRetryableError).
 */
export async function startBlockKeyConsumer(
  closers: Array<() => Promise<unknown>>,
  stream: string,
  failures: Map<string, number>,
  extras: StreamHandlerOptions = {},
  consumer?: string,
) {
  const done: string[] = [];
  @Controller()
  class BlockKeyHandler {
    @EventPattern(stream, { orderingKey: 'k', onDeadLetter: 'block-key', concurrency: 4, maxDeliveries: 2, ...extras })
    handle(@Payload() data: { k: string; n: string; later?: string; fatal?: string }) {
      const name = `${data.k}:${data.n}`;
      const left = failures.get(name) ?? 0;
      if (left > 0) {
        failures.set(name, left - 1);
        if (data.fatal) throw new NonRetryableError(`${name} can never pass`);
        throw data.later ? new RetryLater(Number(data.later)) : new Error(`${name} is poison`);
      }
      done.push(name);
    }
  }
  const options = { reclaimIntervalMs: 50, retryBackoffMs: 10, minIdleTimeMs: 1_000, ...(consumer ? { consumer } : {}) };
  const started = await startMicroservice([BlockKeyHandler], options);
  closers.push(() => started.app.close());
  return { ...started, done };
}

/** The runs of `key` among `done`, in order (split at the last ':': a key may hold ':' or be ''). */
export const runsOf = (done: string[], key: string) => done.filter((name) => name.slice(0, name.lastIndexOf(':')) === key);

/** Server options under which a failed blocker waits 30 s for its retry: it stays `failing` while an operator acts. */
export const SLOW_RETRIES = { retryBackoffMs: 30_000, minIdleTimeMs: 30_000 };

/**
 * Entries `{ k: key, n }` 1, 2 and 3 added to `stream`, under a consumer (SLOW_RETRIES) that fails
 * entry 1: it is being retried and blocks the key, 2 and 3 are held behind it. → entry 1's id.
 */
export async function failingWithTwoHeld(redis: Redis, stream: string, key: string): Promise<string> {
  const add = (n: string) => redis.xadd(stream, '*', 'k', key, 'n', n) as Promise<string>;
  const first = await add('1');
  await waitFor(async () => (await blockOf(redis, stream, key))?.state === 'failing', `key ${key} failing`);
  await add('2');
  await add('3');
  await waitFor(async () => (await waiting(redis, stream, key)) === 2, `${key}:2 and ${key}:3 held`);
  return first;
}

/** Waits until `key` is no longer blocked and group `nest` has nothing pending. */
export async function keyFree(redis: Redis, stream: string, key: string): Promise<void> {
  await waitFor(async () => (await blockOf(redis, stream, key)) === null, `key ${key} free`);
  await waitFor(async () => (await pendingCount(redis, stream, 'nest')) === 0, 'nothing pending');
}
