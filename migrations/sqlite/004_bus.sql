-- Chat buses: the durable outbox (src/server/bus/outbox.ts) and pairing
-- (src/server/bus/pairing.ts). Times are epoch milliseconds.

CREATE TABLE outbox (
  id INTEGER PRIMARY KEY,
  -- One entry per reply: `job:<job id>`, `post:<job id>:<hash>`, `bus:<platform>:<message id>`.
  dedupe_key TEXT NOT NULL UNIQUE,
  platform TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  -- draft: a reply still streaming (text null); pending: to deliver; delivered; failed
  -- (the platform refused it for good: a deleted chat, a blocked bot).
  state TEXT NOT NULL
    CHECK (state = 'draft' OR state = 'pending' OR state = 'delivered' OR state = 'failed'),
  text TEXT,
  -- JSON array of platform message ids already showing part of this reply, in order;
  -- delivery edits them before sending new ones, so a retry never repeats a part.
  message_ids TEXT NOT NULL DEFAULT '[]',
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  delivered_at INTEGER
);

-- Delivery: pending entries that are due.
CREATE INDEX outbox_due ON outbox (next_attempt_at) WHERE state = 'pending';

-- Pairing codes handed to unknown users; a code is valid for an hour.
CREATE TABLE pairing_requests (
  code TEXT PRIMARY KEY,
  platform TEXT NOT NULL,
  user_id TEXT NOT NULL,
  user_name TEXT NOT NULL,
  chat_id TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);

CREATE INDEX pairing_requests_user ON pairing_requests (platform, user_id);

-- Users the owner approved with `picklebot pairing approve`.
CREATE TABLE paired_users (
  platform TEXT NOT NULL,
  user_id TEXT NOT NULL,
  user_name TEXT NOT NULL,
  approved_at INTEGER NOT NULL,
  PRIMARY KEY (platform, user_id)
);

-- When each unknown user was last told they are not allowed (at most once an hour).
CREATE TABLE pairing_refusals (
  platform TEXT NOT NULL,
  user_id TEXT NOT NULL,
  refused_at INTEGER NOT NULL,
  PRIMARY KEY (platform, user_id)
);
