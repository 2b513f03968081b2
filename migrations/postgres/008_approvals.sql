-- Tool-call approvals (src/ports/approval.ts), shared by every process of a cluster:
-- requests waiting for the owner's answer, and the "always allow" grants.
-- The same columns as SQLite's migration 008, so both adapters share their row mapping.
-- Times are epoch milliseconds.

CREATE TABLE approval_requests (
  -- Short and typeable: `picklebot approvals allow <id>`.
  id text PRIMARY KEY,
  job_id text NOT NULL,
  agent_id text NOT NULL,
  tool text NOT NULL,
  -- JSON of the call's input, cut for display.
  input text NOT NULL,
  -- The policy rule that asked: a path glob, or '*'.
  pattern text NOT NULL,
  -- The job's reply target (JSON): where the question was shown.
  reply_to text NOT NULL,
  state text NOT NULL DEFAULT 'pending'
    CHECK (state IN ('pending', 'allowed', 'denied', 'expired')),
  decision text CHECK (decision IS NULL OR decision IN ('once', 'always', 'deny')),
  answered_by text,
  created_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  answered_at bigint,
  -- The chat message showing the buttons.
  message_id text
);

-- `approvals list`: the pending ones, oldest first.
CREATE INDEX approval_requests_pending ON approval_requests (created_at) WHERE state = 'pending';

-- "Always allow" answers, until `picklebot approvals revoke`.
CREATE TABLE approval_grants (
  agent_id text NOT NULL,
  tool text NOT NULL,
  pattern text NOT NULL,
  granted_at bigint NOT NULL,
  granted_by text NOT NULL,
  PRIMARY KEY (agent_id, tool, pattern)
);
