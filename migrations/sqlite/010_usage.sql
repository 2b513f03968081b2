-- The usage ledger (UsageLedger, src/storage/sqlite/history.ts): one row per model call,
-- inserted in the transaction that appends the message the call produced. Times are epoch
-- milliseconds. agent_id and session_key are copied from the session, so reports need no join.

CREATE TABLE usage (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  agent_id TEXT NOT NULL,
  session_key TEXT NOT NULL,
  job_id TEXT,
  model TEXT NOT NULL,
  batch INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL,
  output_tokens INTEGER NOT NULL,
  cache_read_tokens INTEGER NOT NULL,
  cache_write_tokens INTEGER NOT NULL,
  -- Of cache_write_tokens, those written with the 1-hour lifetime (priced higher).
  cache_write_1h_tokens INTEGER NOT NULL DEFAULT 0,
  created_at INTEGER NOT NULL,
  -- The message the call produced: one call per message.
  PRIMARY KEY (session_id, seq)
);

-- Reports and budgets read a time range.
CREATE INDEX usage_created ON usage (created_at);
