-- Web searches the model API ran for a call (Anthropic's server-side web search, issue 31),
-- priced per search in reports and budgets (src/agents/prices.ts).
ALTER TABLE usage ADD COLUMN web_searches INTEGER NOT NULL DEFAULT 0;
