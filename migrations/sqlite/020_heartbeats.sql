-- Heartbeats (docs/guides/reminders.md, "Heartbeats"): a chat's recurring check, set with
-- /heartbeat, is a row of `schedules` of kind 'heartbeat'. SQLite cannot change a CHECK in
-- place, so the table is made again with the wider one and its rows copied over.

CREATE TABLE schedules_with_heartbeats (
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  platform TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  created_by TEXT NOT NULL,
  -- 'message' is delivered verbatim; 'task' runs as an agent turn; 'heartbeat' runs as an
  -- agent turn when the chat is idle, and sends nothing when it finds nothing.
  kind TEXT NOT NULL CHECK (kind IN ('message', 'task', 'heartbeat')),
  text TEXT NOT NULL,
  at INTEGER,
  cron TEXT,
  timezone TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'done', 'cancelled')),
  last_fired_at INTEGER,
  created_at INTEGER NOT NULL,
  cancelled_at INTEGER,
  CHECK ((at IS NULL) <> (cron IS NULL))
);

INSERT INTO schedules_with_heartbeats
  SELECT id, agent_id, platform, chat_id, created_by, kind, text, at, cron, timezone, state,
    last_fired_at, created_at, cancelled_at
  FROM schedules;
DROP TABLE schedules;
ALTER TABLE schedules_with_heartbeats RENAME TO schedules;

CREATE INDEX schedules_chat ON schedules (platform, chat_id, state);
CREATE INDEX schedules_active ON schedules (state) WHERE state = 'active';
