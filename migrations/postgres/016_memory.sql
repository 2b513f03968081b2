-- Memory (issue 28, src/ports/memory.ts): the agents' notes and what they know about each
-- person, the record of every change, the links between person keys, each session's
-- person and memory snapshot, and the full-text index over stored conversations. The same
-- tables as SQLite's migration 014, so both adapters share their statements
-- (src/storage/memory-rows.ts). Times are epoch milliseconds.

-- One text per agent and scope: 'agent' (its notes) or a person key (telegram:<user id>,
-- discord:<user id>, owner). Entries are separated by a line holding only '§'.
CREATE TABLE memories (
  agent_id text NOT NULL,
  scope text NOT NULL,
  text text NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (agent_id, scope)
);

-- Every change: which entry, by whom (agent, cli, dashboard, chat), from which job,
-- session and tool call.
CREATE TABLE memory_changes (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  agent_id text NOT NULL,
  scope text NOT NULL,
  action text NOT NULL CHECK (action IN ('add', 'replace', 'remove', 'edit', 'clear', 'link')),
  entry text,
  previous text,
  by text NOT NULL,
  job_id text,
  session_id text,
  call_id text,
  created_at bigint NOT NULL
);

-- A tool call writes at most once, even when it runs again after a crash.
CREATE UNIQUE INDEX memory_changes_call ON memory_changes (session_id, call_id)
  WHERE call_id IS NOT NULL;
-- The changes of one memory, newest first.
CREATE INDEX memory_changes_memory ON memory_changes (agent_id, scope, id);

-- `picklebot memory link`: `person` shares the memory of `linked_to`, which is never
-- itself linked (links are kept one step deep).
CREATE TABLE person_links (
  person text PRIMARY KEY,
  linked_to text NOT NULL,
  created_at bigint NOT NULL
);
CREATE INDEX person_links_to ON person_links (linked_to);

-- Who each session is with (NULL: a group, a subagent, a cron delivering to no person)
-- and the memory text its system prompt carries (NULL until its first turn takes it).
CREATE TABLE session_memory (
  session_id text PRIMARY KEY,
  session_key text NOT NULL,
  agent_id text NOT NULL,
  person text,
  snapshot text,
  taken_at bigint
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
    WHEN key ~ '^telegram:[1-9][0-9]*$' THEN key
  END
FROM sessions;

-- Who sent a chat job's message (JSON of a JobSender); the row-level policies of 009
-- cover it.
ALTER TABLE jobs ADD COLUMN sender text;

-- session_search: the text blocks of every stored message (what the person and the agent
-- said; not tool calls, tool outputs or summaries), computed by the statement that stores
-- the message, so in its transaction. Adding it indexes the messages stored before.
ALTER TABLE messages ADD COLUMN search tsvector GENERATED ALWAYS AS (
  to_tsvector('english', jsonb_path_query_array(content::jsonb, '$[*] ? (@.type == "text").text'))
) STORED;
CREATE INDEX messages_search ON messages USING gin (search);
-- A search ranks the newest matches only: for a word in most messages it walks the newest
-- messages instead of fetching every match through the GIN index.
CREATE INDEX messages_created ON messages (created_at);

-- Instance roles made before these tables (instance-roles.ts INSTANCE_GRANTS).
DO $$
DECLARE
  entry record;
BEGIN
  FOR entry IN
    SELECT r.role FROM instance_roles r JOIN pg_roles p ON p.rolname = r.role
  LOOP
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON memories TO %I', entry.role);
    EXECUTE format('GRANT SELECT, INSERT ON memory_changes TO %I', entry.role);
    EXECUTE format('GRANT SELECT, INSERT, DELETE ON person_links TO %I', entry.role);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON session_memory TO %I', entry.role);
  END LOOP;
END $$;
