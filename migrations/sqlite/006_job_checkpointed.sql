-- Whether a job's user message is in history (issue 9): set by the checkpoint, read by the
-- worker to resume. Before, a job counted as checkpointed when its message was ".", which
-- a person's own "." message could not be told apart from. Jobs checkpointed by an older
-- version carry both the marker and their session.
ALTER TABLE jobs ADD COLUMN checkpointed INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET checkpointed = 1 WHERE message = '.' AND session_id IS NOT NULL;
