-- Pending pairing requests that a newer request pushed out of a full platform (so a flood
-- of throw-away accounts cannot hold every slot); `picklebot pairing list` counts the
-- recent ones. Rows older than a day are dropped as new ones come. Times are epoch ms.
CREATE TABLE pairing_replacements (
  platform TEXT NOT NULL,
  user_id TEXT NOT NULL,
  user_name TEXT NOT NULL,
  replaced_at INTEGER NOT NULL
);

CREATE INDEX pairing_replacements_at ON pairing_replacements (replaced_at);
