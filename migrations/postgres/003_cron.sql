-- Cron state: which occurrence of each cron fired last (src/server/cron/postgres-state.ts).
-- Times are epoch milliseconds.

CREATE TABLE cron_state (
  cron_id text PRIMARY KEY,
  first_seen_at bigint NOT NULL,
  -- The scheduled time of the last occurrence that fired; only ever moves forward.
  last_fired_at bigint,
  disabled boolean NOT NULL DEFAULT false
);
