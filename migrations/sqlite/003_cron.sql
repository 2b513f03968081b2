-- Cron state: which occurrence of each cron fired last (CronStateStore,
-- src/server/cron/sqlite-state.ts). Times are epoch milliseconds.

CREATE TABLE cron_state (
  -- The cron id: its file name in crons/ without .yaml.
  cron_id TEXT PRIMARY KEY,
  -- When this cron was first loaded; catch_up looks no further back than this.
  first_seen_at INTEGER NOT NULL,
  -- The scheduled time of the last occurrence that fired; only ever moves forward.
  last_fired_at INTEGER,
  -- 1 once a one_off cron has fired: it never fires again (its file is left alone).
  disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1))
);
