-- History: sessions and their messages (HistoryStore, src/history/sqlite.ts).
-- Times are epoch milliseconds; message content is the Anthropic content blocks as JSON.

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  key TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  title TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  message_count INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cache_read_tokens INTEGER NOT NULL DEFAULT 0,
  cache_write_tokens INTEGER NOT NULL DEFAULT 0
);

-- currentSession(key) and listSessions({ key }): newest first, ties broken by rowid.
CREATE INDEX sessions_key_created ON sessions (key, created_at);
-- listSessions() over every key.
CREATE INDEX sessions_created ON sessions (created_at);

CREATE TABLE messages (
  session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
  content TEXT NOT NULL,
  job_id TEXT,
  created_at INTEGER NOT NULL,
  -- loadContext reads a session's tail through this key, never the whole table.
  PRIMARY KEY (session_id, seq)
);

-- A job's user message is stored at most once per session (the checkpoint's idempotency).
CREATE UNIQUE INDEX messages_session_job ON messages (session_id, job_id)
  WHERE job_id IS NOT NULL;
