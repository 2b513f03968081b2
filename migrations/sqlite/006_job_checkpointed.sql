-- Whether a job's user message is in history (issue 9): set by the checkpoint, read by the
-- worker to resume. Before, a job counted as checkpointed when its message was ".", which
-- a person's own "." message could not be told apart from. Jobs checkpointed by an older
-- version carry both the marker and their session.
ALTER TABLE jobs ADD COLUMN checkpointed INTEGER NOT NULL DEFAULT 0;
UPDATE jobs SET checkpointed = 1 WHERE message = '.' AND session_id IS NOT NULL;
-- What a job does: 'turn' (answer its message) or 'compact' (/compact: summarise the
-- conversation so far), a field of its own rather than a text the message could hold.
ALTER TABLE jobs ADD COLUMN task TEXT NOT NULL DEFAULT 'turn';
