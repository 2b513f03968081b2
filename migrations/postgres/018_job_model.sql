-- The named model (or model id) a job's turn uses instead of its agent's: a cron's
-- `model` (issue 30). NULL: the agent's.
ALTER TABLE jobs ADD COLUMN model text;
