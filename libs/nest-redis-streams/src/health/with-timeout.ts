import { HEALTH_MESSAGES } from './health.constants.js';

/**
 * Settles with `work`, or rejects once `ms` have passed. A probe must answer in time even when
 * Redis does not: ioredis would otherwise queue the command until it reconnects.
 */
export async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(HEALTH_MESSAGES.timedOut(what, ms))), ms);
  });
  try {
    // race() subscribes to `work`, so its late rejection is never left unhandled.
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
