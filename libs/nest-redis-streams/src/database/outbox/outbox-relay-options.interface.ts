/** Options of `OutboxRelay`. */
export interface OutboxRelayOptions {
  /**
   * Most events one round locks and publishes.
   * @default 100
   */
  batchSize?: number;
  /**
   * Longest wait between rounds when no NOTIFY arrives (the fallback when LISTEN is off, broken
   * or the adapter has none; also when a retry becomes due).
   * @default 1000
   */
  pollIntervalMs?: number;
  /**
   * Wake up on `NOTIFY nrs_outbox` (sent by the migration's trigger when events commit).
   * @default true
   */
  listen?: boolean;
  /**
   * First retry delay of an event whose publish failed; doubles per attempt up to `maxRetryDelayMs`.
   * The event is never dropped: later events of its partition key wait behind it (the other keys
   * go on). A failure no retry can fix (`isPermanentPublishError`) parks the event instead.
   * @default 500
   */
  retryDelayMs?: number;
  /**
   * Longest retry delay.
   * @default 60000
   */
  maxRetryDelayMs?: number;
}

/** The defaults of `OutboxRelayOptions`, merged once. */
export const OUTBOX_RELAY_DEFAULTS: Required<OutboxRelayOptions> = {
  batchSize: 100,
  pollIntervalMs: 1000,
  listen: true,
  retryDelayMs: 500,
  maxRetryDelayMs: 60_000,
};

/** The NOTIFY channel of the migration's trigger. */
export const OUTBOX_CHANNEL = 'nrs_outbox';
