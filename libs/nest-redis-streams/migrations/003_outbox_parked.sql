-- nest-redis-streams outbox: parked events. An event whose publish failed with an error no retry
-- can fix (over the client's maxPayloadBytes, WRONGTYPE at the target key, an ACL refusal, a
-- serializer failure) is parked: `parked_at` is set, `last_error` says why, and the relay leaves it
-- alone until an operator re-publishes it (`outbox.republishParked`) or discards it
-- (`outbox.discardParked`). Later events of its partition key wait behind it (per-key order).
-- Index plan:
--   nrs_outbox_parked (seq) WHERE parked_at IS NOT NULL AND sent_at IS NULL: listing, counting
--     and alerting on parked events (few rows, however large the table);
--   nrs_outbox_retrying (partition_key, seq) WHERE sent_at IS NULL AND attempts > 0: the relay's
--     "which keys are held by a failed head" lookup, over the few rows that ever failed.
ALTER TABLE nrs_outbox ADD COLUMN IF NOT EXISTS parked_at timestamptz;
CREATE INDEX IF NOT EXISTS nrs_outbox_parked ON nrs_outbox (seq) WHERE parked_at IS NOT NULL AND sent_at IS NULL;
CREATE INDEX IF NOT EXISTS nrs_outbox_retrying ON nrs_outbox (partition_key, seq) WHERE sent_at IS NULL AND attempts > 0;
