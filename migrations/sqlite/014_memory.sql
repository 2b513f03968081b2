-- Memory (issue 28, src/ports/memory.ts): the agents' notes and what they know about each
-- person, the record of every change, the links between person keys, each session's
-- person and memory snapshot, and the full-text index over stored conversations.
-- Times are epoch milliseconds.

-- One text per agent and scope: 'agent' (its notes) or a person key (telegram:<user id>,
-- discord:<user id>, owner). Entries are separated by a line holding only '§'.
CREATE TABLE memories (
  agent_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  text TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (agent_id, scope)
);

-- Every change: which entry, by whom (agent, cli, dashboard, chat), from which job,
-- session and tool call.
CREATE TABLE memory_changes (
  id INTEGER PRIMARY KEY,
  agent_id TEXT NOT NULL,
  scope TEXT NOT NULL,
  action TEXT NOT NULL CHECK (action IN ('add', 'replace', 'remove', 'edit', 'clear', 'link')),
  entry TEXT,
  previous TEXT,
  by TEXT NOT NULL,
  job_id TEXT,
  session_id TEXT,
  call_id TEXT,
  created_at INTEGER NOT NULL
);

-- A tool call writes at most once, even when it runs again after a crash.
CREATE UNIQUE INDEX memory_changes_call ON memory_changes (session_id, call_id)
  WHERE call_id IS NOT NULL;
-- The changes of one memory, newest first.
CREATE INDEX memory_changes_memory ON memory_changes (agent_id, scope, id);

-- `picklebot memory link`: `person` shares the memory of `linked_to`, which is never
-- itself linked (links are kept one step deep).
CREATE TABLE person_links (
  person TEXT PRIMARY KEY,
  linked_to TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX person_links_to ON person_links (linked_to);

-- Who each session is with (NULL: a group, a subagent, a cron delivering to no person)
-- and the memory text its system prompt carries (NULL until its first turn takes it).
CREATE TABLE session_memory (
  session_id TEXT PRIMARY KEY,
  session_key TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  person TEXT,
  snapshot TEXT,
  taken_at INTEGER
);
-- A person's sessions (session_search), and a chat's newest person (a cron's delivery).
CREATE INDEX session_memory_person ON session_memory (agent_id, person);
CREATE INDEX session_memory_key ON session_memory (session_key);

-- Sessions stored before this migration: the owner's (terminal, dashboard) and Telegram's
-- private chats (a positive chat id is the user's id) are known to be one person's.
INSERT INTO session_memory (session_id, session_key, agent_id, person)
SELECT id, key, agent_id,
  CASE
    WHEN key LIKE 'console:%' OR key LIKE 'web:%' THEN 'owner'
    WHEN key GLOB 'telegram:[1-9]*' AND NOT substr(key, 10) GLOB '*[^0-9]*' THEN key
  END
FROM sessions;

-- Who sent a chat job's message (JSON of a JobSender).
ALTER TABLE jobs ADD COLUMN sender TEXT;

-- session_search: the text blocks of every stored message (what the person and the agent
-- said; not tool calls, tool outputs or summaries), with the message's session and seq
-- (its key; a message's rowid is not stable across VACUUM), and `scope`: tokens naming
-- the message's agent and session key (k), its session (s) and, once known, its agent and
-- person (p), each the hex of the value between a letter and a 0 (one token, which the
-- tokenizer keeps whole and the stemmer leaves alone). A search matches its words AND its
-- scope's token, so the full-text index itself keeps to one person's (or one chat's)
-- messages with one agent, and ranks only those. Filled by triggers in the statement that
-- stores the message (or the session's person), so in its transaction. Messages are never
-- deleted; should one be, its index row matches no message and is never shown.
CREATE VIRTUAL TABLE messages_search USING fts5 (
  text,
  scope,
  session_id UNINDEXED,
  seq UNINDEXED,
  tokenize = 'porter unicode61 remove_diacritics 2'
);

-- The scope tokens of each session's messages.
CREATE VIEW messages_search_scope AS
SELECT s.id AS session_id,
  'k' || hex(s.agent_id || char(10) || s.key) || '0 s' || hex(s.id) || '0'
    || COALESCE(' p' || hex(s.agent_id || char(10) || sm.person) || '0', '') AS scope
FROM sessions s LEFT JOIN session_memory sm ON sm.session_id = s.id;

CREATE TRIGGER messages_search_insert AFTER INSERT ON messages
WHEN json_valid(new.content)
BEGIN
  INSERT INTO messages_search (text, scope, session_id, seq)
  SELECT group_concat(json_extract(value, '$.text'), char(10)),
    (SELECT scope FROM messages_search_scope WHERE session_id = new.session_id),
    new.session_id, new.seq
  FROM json_each(new.content)
  WHERE json_extract(value, '$.type') = 'text'
  HAVING count(*) > 0;
END;

-- Messages stored before this migration (their sessions' people are known from above).
INSERT INTO messages_search (text, scope, session_id, seq)
SELECT group_concat(json_extract(block.value, '$.text'), char(10)), scope.scope,
  m.session_id, m.seq
FROM messages m JOIN messages_search_scope scope ON scope.session_id = m.session_id,
  json_each(m.content) block
WHERE json_valid(m.content) AND json_extract(block.value, '$.type') = 'text'
GROUP BY m.session_id, m.seq;

-- A session's person becomes known (at its first turn, after its first message is
-- stored): its messages are indexed again with the person's token.
CREATE TRIGGER session_memory_person_insert AFTER INSERT ON session_memory
WHEN new.person IS NOT NULL
BEGIN
  DELETE FROM messages_search WHERE messages_search MATCH 'scope : s' || hex(new.session_id) || '0';
  INSERT INTO messages_search (text, scope, session_id, seq)
  SELECT group_concat(json_extract(block.value, '$.text'), char(10)),
    (SELECT scope FROM messages_search_scope WHERE session_id = new.session_id),
    m.session_id, m.seq
  FROM messages m, json_each(m.content) block
  WHERE m.session_id = new.session_id AND json_valid(m.content)
    AND json_extract(block.value, '$.type') = 'text'
  GROUP BY m.seq;
END;

CREATE TRIGGER session_memory_person_update AFTER UPDATE OF person ON session_memory
WHEN old.person IS NULL AND new.person IS NOT NULL
BEGIN
  DELETE FROM messages_search WHERE messages_search MATCH 'scope : s' || hex(new.session_id) || '0';
  INSERT INTO messages_search (text, scope, session_id, seq)
  SELECT group_concat(json_extract(block.value, '$.text'), char(10)),
    (SELECT scope FROM messages_search_scope WHERE session_id = new.session_id),
    m.session_id, m.seq
  FROM messages m, json_each(m.content) block
  WHERE m.session_id = new.session_id AND json_valid(m.content)
    AND json_extract(block.value, '$.type') = 'text'
  GROUP BY m.seq;
END;
