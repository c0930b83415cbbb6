/** Prefix of `RedisIdempotencyStore`'s marker keys when none is given: `nrs:idem:<dedup key>`. */
export const IDEMPOTENCY_KEY_PREFIX = 'nrs:idem:';
