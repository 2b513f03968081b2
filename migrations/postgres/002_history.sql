-- History: sessions and their messages (HistoryStore, src/history/postgres.ts).
-- Times are epoch milliseconds; message content is the Anthropic content blocks as JSON text.

CREATE TABLE sessions (
  -- Creation order: breaks ties between sessions created in the same millisecond.
  seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  id text PRIMARY KEY,
  key text NOT NULL,
  agent_id text NOT NULL,
  title text,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  message_count integer NOT NULL DEFAULT 0,
  input_tokens bigint NOT NULL DEFAULT 0,
  output_tokens bigint NOT NULL DEFAULT 0,
  cache_read_tokens bigint NOT NULL DEFAULT 0,
  cache_write_tokens bigint NOT NULL DEFAULT 0
);

CREATE INDEX sessions_key_created ON sessions (key, created_at DESC, seq DESC);
CREATE INDEX sessions_created ON sessions (created_at DESC, seq DESC);

CREATE TABLE messages (
  session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
  seq integer NOT NULL,
  role text NOT NULL CHECK (role IN ('user', 'assistant')),
  content text NOT NULL,
  -- A user message without tool_result blocks: a context may start here.
  turn_start boolean NOT NULL,
  job_id text,
  created_at bigint NOT NULL,
  PRIMARY KEY (session_id, seq)
);

-- A job's user message is stored at most once per session (the checkpoint's idempotency).
CREATE UNIQUE INDEX messages_session_job ON messages (session_id, job_id)
  WHERE job_id IS NOT NULL;
