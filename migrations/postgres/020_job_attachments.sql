-- Files sent with a chat message (issue 29): a JSON array of ChatAttachment, downloaded
-- and read by the job before its user message is written. The same column as SQLite's
-- migration 013; the row-level policies of 009 cover it.
ALTER TABLE jobs ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]';
