-- Whether a job's user message is in history: set by the checkpoint, read by the worker to
-- resume (the same column as SQLite's migration 006). Jobs checkpointed by an older version
-- carry both the marker "." and their session.
ALTER TABLE jobs ADD COLUMN checkpointed BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE jobs SET checkpointed = TRUE WHERE message = '.' AND session_id IS NOT NULL;
-- What a job does: 'turn' (answer its message) or 'compact' (/compact: summarise the
-- conversation so far), a field of its own rather than a text the message could hold.
ALTER TABLE jobs ADD COLUMN task TEXT NOT NULL DEFAULT 'turn';
