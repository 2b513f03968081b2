-- What a priced speech service charged for a message, in USD (issue 29): the transcription
-- of the voice notes a user message carries, at speech_to_text.price_per_minute. Recorded
-- with the message, so it is counted once; reports and budgets add it to the token cost.
ALTER TABLE usage ADD COLUMN service_usd double precision NOT NULL DEFAULT 0;
