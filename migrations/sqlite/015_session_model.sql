-- The named model a conversation uses instead of its agent's (`/model` in a chat, issue
-- 30); NULL: its agent's.
ALTER TABLE sessions ADD COLUMN model TEXT;
