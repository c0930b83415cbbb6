/** Options of `@Idempotent()` and `runOnce()`. */
export interface IdempotencyOptions {
  /**
   * Stable name of the effect this guard protects; part of the dedup key with the stream, group
   * and event id, so two guarded handlers of one stream and group each run once per event. Keep
   * it across deploys: renaming it lets every event of the last `doneTtlMs` run again.
   * @default `Class.method` of the handler for `@Idempotent()`; `'run-once'` for `runOnce()`
   */
  handler?: string;
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
  /**
   * Also honours a "done" marker of the old key shape (`<group>:<event id>`, written by versions
   * that keyed on group and event only), so an event completed before an upgrade is not run
   * again after it. Costs one read on an event's first delivery. Turn it off once `doneTtlMs`
   * has passed since the upgrade (no old marker is left), or at once if one event id is used on
   * several streams or handlers of a group: an old marker cannot tell them apart.
   * @default true
   */
  legacyKeys?: boolean;
}
