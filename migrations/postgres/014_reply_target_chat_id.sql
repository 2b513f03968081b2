-- One reply-target shape for every chat platform (issue 26): a Discord target names its
-- chat `chatId`, as a Telegram one does, instead of `channelId`. Rewrites the targets
-- stored as JSON text in jobs and approval requests, `{"kind":"discord","channelId":"123"}`
-- into `{"kind":"discord","chatId":"123"}` (the text JSON.stringify writes). Only rows
-- whose text names a channelId are parsed, so a row edited into something that is not
-- JSON (it reads as silent) does not stop the migration unless it also says channelId.
-- Servers of the previous release still running in a cluster may write the old shape
-- until they are upgraded; the readers accept it (src/storage/job.ts readReplyTarget).
UPDATE jobs
SET reply_to = '{"kind":"discord","chatId":' || to_json(reply_to::json ->> 'channelId')::text || '}'
WHERE CASE
  WHEN reply_to LIKE '%"channelId"%' THEN
    reply_to::json ->> 'kind' = 'discord' AND json_typeof(reply_to::json -> 'channelId') = 'string'
  ELSE false
END;

UPDATE approval_requests
SET reply_to = '{"kind":"discord","chatId":' || to_json(reply_to::json ->> 'channelId')::text || '}'
WHERE CASE
  WHEN reply_to LIKE '%"channelId"%' THEN
    reply_to::json ->> 'kind' = 'discord' AND json_typeof(reply_to::json -> 'channelId') = 'string'
  ELSE false
END;
