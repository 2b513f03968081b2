-- Files sent with a chat message (issue 29): a JSON array of ChatAttachment, downloaded
-- and read by the job before its user message is written.
ALTER TABLE jobs ADD COLUMN attachments TEXT NOT NULL DEFAULT '[]';
