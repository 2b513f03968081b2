-- Parked jobs and subagents (issue 10). A parked job stays 'queued', due at its deadline
-- (run_at), with waiting_for saying what it waits for (JSON of a JobWait); waking it makes
-- it due at once. It shows as 'waiting'. parent_id links a subagent's job to the job it
-- works for, which is woken when it ends; stop_requested asks a job that is not running
-- to end as stopped by the user at its next run. tool_results keeps, while it is parked,
-- the results of the turn's tool calls that did finish (a JSON array), so they do not run
-- again when it resumes.
ALTER TABLE jobs ADD COLUMN waiting_for TEXT;
ALTER TABLE jobs ADD COLUMN parent_id TEXT;
ALTER TABLE jobs ADD COLUMN tool_results TEXT NOT NULL DEFAULT '[]';
ALTER TABLE jobs ADD COLUMN stop_requested BOOLEAN NOT NULL DEFAULT FALSE;

-- A parent's children (jobs show, /stop of a parent).
CREATE INDEX jobs_parent ON jobs (parent_id) WHERE parent_id IS NOT NULL;
