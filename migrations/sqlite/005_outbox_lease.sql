-- The outbox delivery lease (src/server/bus/outbox.ts `claim`): who is sending an entry
-- now, and until when. A process that dies mid-send leaves a lease that simply expires.
ALTER TABLE outbox ADD COLUMN locked_by TEXT;
ALTER TABLE outbox ADD COLUMN locked_until INTEGER;
