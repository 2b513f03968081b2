/** The approval tables' rows, alike for the SQLite and PostgreSQL stores (migration 008). */

import { truncate } from "../base/printable.js";
import {
  APPROVAL_INPUT_MAX_CHARS,
  type ApprovalDecision,
  type ApprovalGrant,
  type ApprovalRequest,
  type ApprovalState,
  type NewApprovalRequest,
} from "../ports/index.js";
import { readReplyTarget } from "./job.js";
import { parseJson } from "./job-row.js";

/** A row of `approval_requests`, as SQLite and PostgreSQL return it. */
export interface ApprovalRequestRow {
  id: string;
  job_id: string;
  agent_id: string;
  tool: string;
  input: string;
  pattern: string;
  reply_to: string;
  state: ApprovalState;
  decision: ApprovalDecision | null;
  answered_by: string | null;
  created_at: number;
  expires_at: number;
  answered_at: number | null;
  message_id: string | null;
}

/** A row of `approval_grants`. */
export interface ApprovalGrantRow {
  agent_id: string;
  tool: string;
  pattern: string;
  granted_at: number;
  granted_by: string;
}

/**
 * The columns {@link newRequestParams} fills, in its order: both adapters insert with
 * `INSERT INTO approval_requests (${NEW_REQUEST_COLUMNS}) VALUES (…)`.
 */
export const NEW_REQUEST_COLUMNS =
  "id, job_id, agent_id, tool, input, pattern, reply_to, created_at, expires_at";

/** The values of a new request's row, in the order of {@link NEW_REQUEST_COLUMNS}. */
export function newRequestParams(request: NewApprovalRequest): (string | number)[] {
  return [
    request.id,
    request.jobId,
    request.agentId,
    request.tool,
    truncate(request.input, APPROVAL_INPUT_MAX_CHARS),
    request.pattern,
    JSON.stringify(request.replyTo),
    request.createdAt,
    request.expiresAt,
  ];
}

/** The state an answer leaves a request in. */
function answeredState(decision: ApprovalDecision): ApprovalState {
  return decision === "deny" ? "denied" : "allowed";
}

/** Maps a stored request row; a reply target edited into nonsense reads as silent. */
export const toApprovalRequest = (row: ApprovalRequestRow): ApprovalRequest => {
  const replyTo = readReplyTarget(parseJson(row.reply_to));
  return {
    id: row.id,
    jobId: row.job_id,
    agentId: row.agent_id,
    tool: row.tool,
    input: row.input,
    pattern: row.pattern,
    replyTo: replyTo ?? { kind: "silent" },
    state: row.state,
    decision: row.decision,
    answeredBy: row.answered_by,
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    answeredAt: row.answered_at,
    messageId: row.message_id,
  };
};

/** Maps a stored grant row. */
export const toApprovalGrant = (row: ApprovalGrantRow): ApprovalGrant => ({
  agentId: row.agent_id,
  tool: row.tool,
  pattern: row.pattern,
  grantedAt: row.granted_at,
  grantedBy: row.granted_by,
});

/**
 * The statements of both adapters, with `?` placeholders (PostgreSQL numbers them). Times
 * compare against the caller's `now`, so a test clock and every process agree.
 */
export const APPROVAL_SQL = {
  open: `INSERT INTO approval_requests (${NEW_REQUEST_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (id) DO NOTHING`,
  get: "SELECT * FROM approval_requests WHERE id = ?",
  pending: "SELECT * FROM approval_requests WHERE state = 'pending' ORDER BY created_at, id",
  setMessageId: "UPDATE approval_requests SET message_id = ? WHERE id = ?",
  /** Params: state, decision, answered_by, now, id, now. */
  answer: `UPDATE approval_requests SET state = ?, decision = ?, answered_by = ?, answered_at = ?
    WHERE id = ? AND state = 'pending' AND expires_at > ? RETURNING *`,
  /** Params: now, id, now. */
  expire: `UPDATE approval_requests SET state = 'expired', answered_at = ?
    WHERE id = ? AND state = 'pending' AND expires_at <= ?`,
  grant: `INSERT INTO approval_grants (agent_id, tool, pattern, granted_at, granted_by)
    VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent_id, tool, pattern) DO NOTHING`,
  isGranted: "SELECT 1 FROM approval_grants WHERE agent_id = ? AND tool = ? AND pattern = ?",
  grants: "SELECT * FROM approval_grants ORDER BY granted_at, agent_id, tool, pattern",
  /** Params: agent, tool, pattern or null, pattern or null. */
  revoke: `DELETE FROM approval_grants
    WHERE agent_id = ? AND tool = ? AND (CAST(? AS TEXT) IS NULL OR pattern = ?) RETURNING *`,
} as const;

/** The params of {@link APPROVAL_SQL}.answer. */
export function answerParams(
  id: string,
  decision: ApprovalDecision,
  answeredBy: string,
  now: number,
): (string | number)[] {
  return [answeredState(decision), decision, answeredBy, now, id, now];
}

/** The params of {@link APPROVAL_SQL}.grant for an "always" answer. */
export function grantParams(request: ApprovalRequest): (string | number)[] {
  const { agentId, tool, pattern, answeredAt, answeredBy } = request;
  return [agentId, tool, pattern, answeredAt ?? 0, answeredBy ?? ""];
}
