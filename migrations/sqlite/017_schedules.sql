-- Schedules: reminders and recurring tasks the agent set up in a chat with its `schedule`
-- tool (ScheduleStore, src/storage/sqlite/schedules.ts). Times are epoch milliseconds.

CREATE TABLE schedules (
  -- Short id the person and the owner cancel it by.
  id TEXT PRIMARY KEY,
  agent_id TEXT NOT NULL,
  -- The chat that asked: platform and chat id.
  platform TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  -- The chat user who asked (or the owner).
  created_by TEXT NOT NULL,
  -- 'message' is delivered verbatim; 'task' runs as an agent turn.
  kind TEXT NOT NULL CHECK (kind IN ('message', 'task')),
  text TEXT NOT NULL,
  -- A one-shot schedule's instant, or a recurring one's cron expression: exactly one.
  at INTEGER,
  cron TEXT,
  timezone TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'done', 'cancelled')),
  -- The last occurrence that fired; only ever moves forward.
  last_fired_at INTEGER,
  created_at INTEGER NOT NULL,
  cancelled_at INTEGER,
  CHECK ((at IS NULL) <> (cron IS NULL))
);

CREATE INDEX schedules_chat ON schedules (platform, chat_id, state);
CREATE INDEX schedules_active ON schedules (state) WHERE state = 'active';
