/** The `usage` table's rows (the same columns in SQLite and PostgreSQL). */
import { oneHourWrites, serviceCost, webSearches } from "../base/usage.js";
import type { ModelCall, TokenUsage, UsageQuery, UsageRecord } from "../ports/index.js";

/** A row of the `usage` table; `batch` is 0/1 in SQLite, a boolean in PostgreSQL. */
export interface UsageRow {
  session_id: string;
  agent_id: string;
  session_key: string;
  job_id: string | null;
  model: string;
  batch: number | boolean;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cache_write_1h_tokens: number;
  web_searches: number;
  service_usd: number;
  created_at: number;
}

/** The model a call without a {@link ModelCall} is recorded under. */
export const UNKNOWN_MODEL = "unknown";

/** The ledger columns of one call, after (session_id, seq, agent_id, session_key). */
export function usageColumns(usage: TokenUsage, call: ModelCall | undefined) {
  return [
    call?.jobId ?? null,
    call?.model ?? UNKNOWN_MODEL,
    call?.batch ?? false,
    usage.input,
    usage.output,
    usage.cacheRead,
    usage.cacheWrite,
    usage.cacheWrite1h ?? 0,
    usage.webSearches ?? 0,
    usage.serviceUsd ?? 0,
  ] as const;
}

/** Maps a `usage` row to a {@link UsageRecord}. */
export function usageFromRow(row: UsageRow): UsageRecord {
  return {
    at: Number(row.created_at),
    agentId: row.agent_id,
    sessionId: row.session_id,
    sessionKey: row.session_key,
    jobId: row.job_id,
    model: row.model,
    batch: row.batch === true || row.batch === 1,
    input: Number(row.input_tokens),
    output: Number(row.output_tokens),
    cacheRead: Number(row.cache_read_tokens),
    cacheWrite: Number(row.cache_write_tokens),
    ...oneHourWrites(Number(row.cache_write_1h_tokens)),
    ...webSearches(Number(row.web_searches)),
    ...serviceCost(Number(row.service_usd)),
  };
}

/** The WHERE clause of a ledger query, with `?`-style or `$n`-style placeholders. */
export function usageWhere(query: UsageQuery, placeholder: (n: number) => string) {
  const clauses = [`created_at >= ${placeholder(1)}`];
  const params: Array<string | number> = [query.since];
  if (query.until !== undefined) {
    params.push(query.until);
    clauses.push(`created_at < ${placeholder(params.length)}`);
  }
  if (query.sessionId !== undefined) {
    params.push(query.sessionId);
    clauses.push(`session_id = ${placeholder(params.length)}`);
  }
  return { where: clauses.join(" AND "), params };
}
