-- The usage ledger (UsageLedger, src/storage/postgres/history.ts): one row per model call,
-- inserted by the statement that appends the message the call produced. Times are epoch
-- milliseconds. agent_id and session_key are copied from the session, so reports need no join.

CREATE TABLE usage (
  -- Insertion order: breaks ties between calls recorded in the same millisecond.
  id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
  session_id text NOT NULL,
  seq integer NOT NULL,
  agent_id text NOT NULL,
  session_key text NOT NULL,
  job_id text,
  model text NOT NULL,
  batch boolean NOT NULL DEFAULT false,
  input_tokens bigint NOT NULL,
  output_tokens bigint NOT NULL,
  cache_read_tokens bigint NOT NULL,
  cache_write_tokens bigint NOT NULL,
  -- Of cache_write_tokens, those written with the 1-hour lifetime (priced higher).
  cache_write_1h_tokens bigint NOT NULL DEFAULT 0,
  created_at bigint NOT NULL,
  -- The message the call produced: one call per message.
  PRIMARY KEY (session_id, seq)
);

-- Reports and budgets read a time range.
CREATE INDEX usage_created ON usage (created_at);

-- Instance roles made before this table (instance-roles.ts INSTANCE_GRANTS) record calls too.
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT role FROM instance_roles LOOP
    EXECUTE format('GRANT SELECT, INSERT ON usage TO %I', r.role);
  END LOOP;
END $$;
