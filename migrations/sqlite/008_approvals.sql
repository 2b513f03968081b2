-- Tool-call approvals (src/ports/approval.ts): requests waiting for the owner's answer,
-- and the "always allow" grants. Times are epoch milliseconds.

CREATE TABLE approval_requests (
  -- Short and typeable: `picklebot approvals allow <id>`.
  id TEXT PRIMARY KEY,
  job_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  -- JSON of the call's input, cut for display.
  input TEXT NOT NULL,
  -- The policy rule that asked: a path glob, or '*'.
  pattern TEXT NOT NULL,
  -- The job's reply target (JSON): where the question was shown.
  reply_to TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'pending'
    CHECK (state IN ('pending', 'allowed', 'denied', 'expired')),
  decision TEXT CHECK (decision IS NULL OR decision IN ('once', 'always', 'deny')),
  answered_by TEXT,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  answered_at INTEGER,
  -- The chat message showing the buttons.
  message_id TEXT
);

-- `approvals list`: the pending ones, oldest first.
CREATE INDEX approval_requests_pending ON approval_requests (created_at) WHERE state = 'pending';

-- "Always allow" answers, until `picklebot approvals revoke`.
CREATE TABLE approval_grants (
  agent_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  pattern TEXT NOT NULL,
  granted_at INTEGER NOT NULL,
  granted_by TEXT NOT NULL,
  PRIMARY KEY (agent_id, tool, pattern)
);
