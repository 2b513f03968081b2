-- Pending pairing requests that a newer request pushed out of a full platform (so a flood
-- of throw-away accounts cannot hold every slot); `picklebot pairing list` counts the
-- recent ones. The same columns as SQLite's migration 009. Times are epoch milliseconds.
CREATE TABLE pairing_replacements (
  platform text NOT NULL,
  user_id text NOT NULL,
  user_name text NOT NULL,
  replaced_at bigint NOT NULL
);

CREATE INDEX pairing_replacements_at ON pairing_replacements (replaced_at);
