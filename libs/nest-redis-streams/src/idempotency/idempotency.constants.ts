/** Injection token of the IdempotencyStore used by `@Idempotent()`. */
export const IDEMPOTENCY_STORE = Symbol('nest-redis-streams:idempotency-store');
/** Metadata key holding `@Idempotent()` options. */
export const IDEMPOTENT_OPTIONS = 'nest-redis-streams:idempotent';

/** Defaults of `IdempotencyOptions`. */
export const IDEMPOTENCY_DEFAULTS = {
  handler: 'run-once',
  processingTtlMs: 60_000,
  doneTtlMs: 7 * 24 * 60 * 60 * 1000,
  legacyKeys: true,
};
