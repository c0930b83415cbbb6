/** Options of `@Idempotent()` and `runOnce()`. */
export interface IdempotencyOptions {
  /**
   * How long a processing claim holds off other deliveries of the same event. Keep it near the
   * handler's min-idle time: a claim left by a crashed consumer blocks retries until it expires.
   * @default 60000
   */
  processingTtlMs?: number;
  /**
   * How long "done" markers are kept: longer than any redelivery or re-publish can arrive.
   * @default 604800000 (7 days)
   */
  doneTtlMs?: number;
}
