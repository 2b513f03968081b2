-- Schedules: reminders and recurring tasks the agent set up in a chat with its `schedule`
-- tool (ScheduleStore, src/storage/postgres/schedules.ts). Times are epoch milliseconds.

CREATE TABLE schedules (
  id text PRIMARY KEY,
  agent_id text NOT NULL,
  platform text NOT NULL,
  chat_id text NOT NULL,
  created_by text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('message', 'task')),
  text text NOT NULL,
  -- A one-shot schedule's instant, or a recurring one's cron expression: exactly one.
  at bigint,
  cron text,
  timezone text NOT NULL,
  state text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'done', 'cancelled')),
  -- The last occurrence that fired; only ever moves forward.
  last_fired_at bigint,
  created_at bigint NOT NULL,
  cancelled_at bigint,
  CHECK ((at IS NULL) <> (cron IS NULL))
);

CREATE INDEX schedules_chat ON schedules (platform, chat_id, state);
CREATE INDEX schedules_active ON schedules (state) WHERE state = 'active';

-- Instance roles made before this table (instance-roles.ts INSTANCE_GRANTS): any instance
-- creates and cancels schedules (the `schedule` tool), the leader records their fires.
DO $$
DECLARE r record;
BEGIN
  FOR r IN SELECT role FROM instance_roles LOOP
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON schedules TO %I', r.role);
  END LOOP;
END $$;
