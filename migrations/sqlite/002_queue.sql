-- The job queue (JobQueue and JobAdmin, src/queue/sqlite.ts). Times are epoch milliseconds.
--
-- Each session key is a line, in `seq` order: done and failed jobs, then at most one
-- running job, then the queued ones. Every write keeps that shape (a retried failed job
-- moves to the back of its line with a new seq), so a queued job may run exactly when the
-- job before it in its line is done or failed (or it has none): one index lookup.
-- That lets a completion rewrite only its row, which is what makes completes cheap.

CREATE TABLE jobs (
  -- Arrival order (the rowid): the order of jobs within a session key.
  seq INTEGER PRIMARY KEY,
  id TEXT NOT NULL UNIQUE,
  agent_id TEXT NOT NULL,
  session_key TEXT NOT NULL,
  session_id TEXT,
  message TEXT NOT NULL,
  mode TEXT NOT NULL CHECK (mode = 'chat' OR mode = 'job'),
  -- The ReplyTarget as JSON.
  reply_to TEXT NOT NULL,
  -- Checked with OR: an IN list would build a temporary table for every row written.
  state TEXT NOT NULL
    CHECK (state = 'queued' OR state = 'running' OR state = 'done' OR state = 'failed'),
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL,
  run_at INTEGER NOT NULL,
  locked_by TEXT,
  locked_at INTEGER,
  -- Set by each claim; every later change must present it (fencing).
  lock_token TEXT,
  last_error TEXT,
  -- JSON array of { attempt, at, message }, oldest first.
  errors TEXT NOT NULL DEFAULT '[]',
  dedupe_key TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- Claim: queued jobs that are due, oldest first.
CREATE INDEX jobs_runnable ON jobs (run_at, seq) WHERE state = 'queued';

-- Claim: the job before a candidate in its session's line.
CREATE INDEX jobs_session_line ON jobs (session_key, seq);

-- Enqueue: a dedupe key is stored at most once.
CREATE UNIQUE INDEX jobs_dedupe_key ON jobs (dedupe_key) WHERE dedupe_key IS NOT NULL;
