-- nest-redis-streams inbox: one row per (stream, group, handler, business event) whose effect
-- committed. The primary key is the dedup key: a second delivery of the event conflicts on it and
-- its transaction does nothing. Index plan:
--   primary key (stream, group_name, handler, event_id): the insert-if-absent of every delivery,
--     and reconciliation's lookups of a window's event ids for one group and handler;
--   nrs_inbox_processed_at: retention (delete rows older than the redelivery horizon) and
--     reconciliation windows on the target side.
CREATE TABLE IF NOT EXISTS nrs_inbox (
  stream       text        NOT NULL,
  group_name   text        NOT NULL,
  handler      text        NOT NULL,
  event_id     text        NOT NULL,
  entry_id     text        NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (stream, group_name, handler, event_id)
);
CREATE INDEX IF NOT EXISTS nrs_inbox_processed_at ON nrs_inbox (processed_at);
