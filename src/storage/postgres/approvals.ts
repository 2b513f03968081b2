/**
 * The {@link ApprovalStore} in PostgreSQL (migration 008): a request parked on one host can
 * be answered from a chat button handled by the leader, or from `picklebot approvals` on
 * any host. Rows map, and statements read, as in SQLite.
 */
import type pg from "pg";
import type {
  ApprovalDecision,
  ApprovalGrant,
  ApprovalRequest,
  ApprovalStore,
  NewApprovalRequest,
} from "../../ports/index.js";
import {
  APPROVAL_SQL,
  type ApprovalGrantRow,
  type ApprovalRequestRow,
  answerParams,
  grantParams,
  newRequestParams,
  toApprovalGrant,
  toApprovalRequest,
} from "../approval-rows.js";
import { inTransaction, queryRetrying } from "./database.js";

/** {@link APPROVAL_SQL} with PostgreSQL's numbered placeholders (`?` becomes `$1`, `$2`…). */
const SQL = Object.fromEntries(
  Object.entries(APPROVAL_SQL).map(([name, text]) => {
    let n = 0;
    return [name, text.replace(/\?/g, () => `$${++n}`)];
  }),
) as Record<keyof typeof APPROVAL_SQL, string>;

/** Tool-call approvals in PostgreSQL. */
export class PostgresApprovalStore implements ApprovalStore {
  readonly #pool: pg.Pool;

  /** `pool`: from `openPostgres` (migrated); never closed here. */
  constructor({ pool }: { pool: pg.Pool }) {
    this.#pool = pool;
  }

  // Safe to repeat after a lost connection: the insert is keyed by the id.
  async open(request: NewApprovalRequest): Promise<ApprovalRequest> {
    await queryRetrying(this.#pool, SQL.open, newRequestParams(request));
    return (await this.get(request.id)) as ApprovalRequest;
  }

  async get(id: string): Promise<ApprovalRequest | null> {
    const { rows } = await queryRetrying<ApprovalRequestRow>(this.#pool, SQL.get, [id]);
    return rows[0] ? toApprovalRequest(rows[0]) : null;
  }

  async pending(): Promise<ApprovalRequest[]> {
    return (await queryRetrying<ApprovalRequestRow>(this.#pool, SQL.pending, [])).rows.map(
      toApprovalRequest,
    );
  }

  async setMessageId(id: string, messageId: string): Promise<void> {
    await queryRetrying(this.#pool, SQL.setMessageId, [messageId, id]);
  }

  // Not repeated after a lost connection: a repeat after a lost COMMIT would find the
  // request answered and report it as refused.
  answer(
    id: string,
    decision: ApprovalDecision,
    answeredBy: string,
    now: number,
  ): Promise<ApprovalRequest | null> {
    return inTransaction(this.#pool, async (client) => {
      const params = answerParams(id, decision, answeredBy, now);
      const row = (await client.query<ApprovalRequestRow>(SQL.answer, params)).rows[0];
      if (!row) return null;
      const answered = toApprovalRequest(row);
      if (decision === "always") await client.query(SQL.grant, grantParams(answered));
      return answered;
    });
  }

  async expire(id: string, now: number): Promise<ApprovalRequest | null> {
    await queryRetrying(this.#pool, SQL.expire, [now, id, now]);
    return this.get(id);
  }

  async isGranted(agentId: string, tool: string, pattern: string): Promise<boolean> {
    return (
      (await queryRetrying(this.#pool, SQL.isGranted, [agentId, tool, pattern])).rows.length > 0
    );
  }

  async grants(): Promise<ApprovalGrant[]> {
    return (await queryRetrying<ApprovalGrantRow>(this.#pool, SQL.grants, [])).rows.map(
      toApprovalGrant,
    );
  }

  async revoke(agentId: string, tool: string, pattern?: string): Promise<ApprovalGrant[]> {
    const only = pattern ?? null;
    const removed = await this.#pool.query<ApprovalGrantRow>(SQL.revoke, [
      agentId,
      tool,
      only,
      only,
    ]);
    return removed.rows.map(toApprovalGrant);
  }
}
