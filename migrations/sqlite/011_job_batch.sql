-- Batch mode for crons (issue 12). `batch` sends the job's model calls through the
-- Message Batches API; `batch_step` (JSON of a BatchStep) is the step it sent last,
-- stored before the batch is created so that a crash never submits one twice.
ALTER TABLE jobs ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN batch_step TEXT;
