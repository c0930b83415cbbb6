import type { Redis } from 'ioredis';

// Replies Redis gives while it cannot serve a write (or anything) for a while: full under
// noeviction, loading its data set, running a long script, failing over. They pass by themselves.
const TRANSIENT_REPLY = /^(OOM|LOADING|BUSY|MASTERDOWN|TRYAGAIN|CLUSTERDOWN|READONLY|NOREPLICAS)\b/;
// ioredis' words for a connection that dropped while it reconnects (not one closed on purpose).
const CONNECTION_LOST = /Connection is closed|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|max retries per request|isn't writeable/i;

/**
 * Whether an error is one Redis (or the way to it) gets over by itself: a refusal such as OOM or
 * LOADING, or a lost connection that the client is re-establishing. A client closed for good (its
 * app shuts down) is not: nothing would come of waiting for it.
 */
export function isTransientRedisError(err: unknown, redis: Pick<Redis, 'status'>): boolean {
  if (!(err instanceof Error)) return false;
  if (TRANSIENT_REPLY.test(err.message)) return true;
  return CONNECTION_LOST.test(err.message) && redis.status !== 'end';
}

/** How long a step is tried again while Redis refuses it, and how long it waits in between. */
export interface RetryPolicy {
  /** Give up once the step has been refused for this long. */
  forMs: number;
  firstDelayMs: number;
  maxDelayMs: number;
  /** Ends the waiting early: the last refusal is thrown. */
  signal?: AbortSignal;
}

/** A step that Redis kept refusing for longer than the policy allows; the message says for how long and why. */
export class RedisKeptRefusingError extends Error {
  override name = 'RedisKeptRefusingError';
}

/**
 * Runs `step`, and runs it again with a growing back-off while it fails with a transient error
 * (see `isTransientRedisError`); any other error, and the last one once `forMs` has passed, is thrown.
 * Only for steps that change nothing when refused, or that are safe to repeat.
 */
export async function retryTransient<T>(redis: Pick<Redis, 'status'>, policy: RetryPolicy, step: () => Promise<T>): Promise<T> {
  const started = Date.now();
  let delay = policy.firstDelayMs;
  for (;;) {
    try {
      return await step();
    } catch (err) {
      if (!isTransientRedisError(err, redis)) throw err;
      const refusedFor = Date.now() - started;
      if (refusedFor + delay > policy.forMs || policy.signal?.aborted) {
        const message = `Redis refused it for ${Math.round(refusedFor / 1000)} s, the last time with: ${(err as Error).message}`;
        throw new RedisKeptRefusingError(message, { cause: err });
      }
      await pause(delay, policy.signal);
      delay = Math.min(delay * 2, policy.maxDelayMs);
    }
  }
}

/** Waits `ms`, or less when `signal` aborts (it resolves then, never rejects). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
