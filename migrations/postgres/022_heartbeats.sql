-- Heartbeats (docs/guides/reminders.md, "Heartbeats"): a chat's recurring check, set with
-- /heartbeat, is a row of `schedules` of kind 'heartbeat', fired when the chat is idle.

ALTER TABLE schedules DROP CONSTRAINT schedules_kind_check;
ALTER TABLE schedules ADD CONSTRAINT schedules_kind_check
  CHECK (kind IN ('message', 'task', 'heartbeat'));
