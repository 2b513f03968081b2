-- One reply-target shape for every chat platform (issue 26): a Discord target names its
-- chat `chatId`, as a Telegram one does, instead of `channelId`. Rewrites the targets
-- stored as JSON in jobs and approval requests, `{"kind":"discord","channelId":"123"}`
-- into `{"kind":"discord","chatId":"123"}` (the text JSON.stringify writes). Rows that
-- are not valid JSON are left alone: they read as silent, as before.
UPDATE jobs
SET reply_to = json_object('kind', 'discord', 'chatId', json_extract(reply_to, '$.channelId'))
WHERE CASE
  WHEN json_valid(reply_to) THEN
    json_extract(reply_to, '$.kind') = 'discord' AND json_type(reply_to, '$.channelId') = 'text'
  ELSE 0
END;

UPDATE approval_requests
SET reply_to = json_object('kind', 'discord', 'chatId', json_extract(reply_to, '$.channelId'))
WHERE CASE
  WHEN json_valid(reply_to) THEN
    json_extract(reply_to, '$.kind') = 'discord' AND json_type(reply_to, '$.channelId') = 'text'
  ELSE 0
END;
