-- Batch mode for crons (issue 12). `batch` sends the job's model calls through the
-- Message Batches API; `batch_step` (JSON of a BatchStep) is the step it sent last,
-- stored before the batch is created so that a crash never submits one twice. The same
-- columns as SQLite's migration 010; the row-level policies of 009 cover them.
ALTER TABLE jobs ADD COLUMN batch BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE jobs ADD COLUMN batch_step TEXT;
