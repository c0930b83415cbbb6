/**
 * Consumer settings of most scenarios: short min-idle, reclaim and retry times so that a 2-core
 * machine goes through many crash/reclaim cycles in seconds, with the idempotency guard on.
 * Scenarios override what they test.
 */
export const FAST_RECOVERY = {
  IDEMPOTENT: 1,
  MIN_IDLE: 1_000,
  RECLAIM_MS: 200,
  RETRY_MS: 50,
  CONCURRENCY: 8,
  PREFETCH: 32,
  MAX_DELIVERIES: 10,
};
