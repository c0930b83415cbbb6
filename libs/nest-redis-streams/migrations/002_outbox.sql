-- nest-redis-streams outbox: events written in the business transaction, published to Redis by
-- the relay (OutboxRelay), which marks them sent. `seq` is the publish order; `event_id` becomes
-- the entry's event_id (the consumers' inbox key). Index plan:
--   nrs_outbox_unsent (seq) WHERE sent_at IS NULL: the relay's "next batch" scan, small however
--     many sent rows are kept;
--   nrs_outbox_unsent_key (partition_key, seq) WHERE sent_at IS NULL: the relay's check that no
--     earlier event of a partition key is still unsent (per-key order);
--   nrs_outbox_created_at: reconciliation windows, backlog age and retention of sent rows.
CREATE TABLE IF NOT EXISTS nrs_outbox (
  seq             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  event_id        text        NOT NULL UNIQUE,
  stream          text        NOT NULL,
  payload         json        NOT NULL,
  headers         jsonb       NOT NULL DEFAULT '{}',
  partition_key   text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  attempts        integer     NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_error      text,
  sent_at         timestamptz,
  entry_id        text
);
CREATE INDEX IF NOT EXISTS nrs_outbox_unsent ON nrs_outbox (seq) WHERE sent_at IS NULL;
CREATE INDEX IF NOT EXISTS nrs_outbox_unsent_key ON nrs_outbox (partition_key, seq) WHERE sent_at IS NULL;
CREATE INDEX IF NOT EXISTS nrs_outbox_created_at ON nrs_outbox (created_at);

-- Wakes the relays (LISTEN nrs_outbox) when a transaction that added events commits; NOTIFY is
-- delivered at commit, so a relay never wakes for rows it cannot see yet.
CREATE OR REPLACE FUNCTION nrs_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('nrs_outbox', '');
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS nrs_outbox_notify ON nrs_outbox;
CREATE TRIGGER nrs_outbox_notify AFTER INSERT ON nrs_outbox
  FOR EACH STATEMENT EXECUTE FUNCTION nrs_outbox_notify();
