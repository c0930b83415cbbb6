/** Why an entry was parked in the dead-letter stream. */
export enum DeadLetterReason {
  /** Failed on every one of `maxDeliveries` deliveries. */
  MAX_DELIVERIES = 'max-deliveries',
  /** The handler threw NonRetryableError. */
  NON_RETRYABLE = 'non-retryable',
  /** The fields could not be decoded; no retry can fix that. */
  UNDECODABLE = 'undecodable',
  /**
   * The `event_id` bytes are not UTF-8: read as text they would collide with other ids (the
   * idempotency key), so the entry is not run. Fix the producer; a re-drive parks it again.
   */
  UNDECODABLE_EVENT_ID = 'undecodable-event-id',
  /** Tombstone: the entry was still pending but trimming had deleted its payload. */
  PAYLOAD_TRIMMED = 'payload-trimmed',
  /** Tombstone for entries trimmed before the group read them at all (`dlq:lost_count` of them). */
  TRIMMED_UNDELIVERED = 'trimmed-undelivered',
}
