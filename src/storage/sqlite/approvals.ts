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
import type { Database } from "./database.js";

/** The {@link ApprovalStore} in picklebot's SQLite database (migration 008). */
export class SqliteApprovalStore implements ApprovalStore {
  readonly #db: Database;
  readonly #sql;

  constructor({ db }: { db: Database }) {
    this.#db = db;
    this.#sql = {
      open: db.prepare(APPROVAL_SQL.open),
      get: db.prepare<[string], ApprovalRequestRow>(APPROVAL_SQL.get),
      pending: db.prepare<[], ApprovalRequestRow>(APPROVAL_SQL.pending),
      setMessageId: db.prepare<[string, string]>(APPROVAL_SQL.setMessageId),
      answer: db.prepare<[(string | number)[]], ApprovalRequestRow>(APPROVAL_SQL.answer),
      expire: db.prepare<[number, string, number]>(APPROVAL_SQL.expire),
      grant: db.prepare(APPROVAL_SQL.grant),
      isGranted: db.prepare<[string, string, string]>(APPROVAL_SQL.isGranted),
      grants: db.prepare<[], ApprovalGrantRow>(APPROVAL_SQL.grants),
      revoke: db.prepare<[string, string, string | null, string | null], ApprovalGrantRow>(
        APPROVAL_SQL.revoke,
      ),
    };
  }

  async open(request: NewApprovalRequest): Promise<ApprovalRequest> {
    return this.#db
      .transaction(() => {
        this.#sql.open.run(newRequestParams(request));
        return this.#getSync(request.id) as ApprovalRequest;
      })
      .immediate();
  }

  async get(id: string): Promise<ApprovalRequest | null> {
    return this.#getSync(id);
  }

  async pending(): Promise<ApprovalRequest[]> {
    return this.#sql.pending.all().map(toApprovalRequest);
  }

  async setMessageId(id: string, messageId: string): Promise<void> {
    this.#sql.setMessageId.run(messageId, id);
  }

  async answer(
    id: string,
    decision: ApprovalDecision,
    answeredBy: string,
    now: number,
  ): Promise<ApprovalRequest | null> {
    return this.#db
      .transaction(() => {
        const row = this.#sql.answer.get(answerParams(id, decision, answeredBy, now));
        if (!row) return null;
        const answered = toApprovalRequest(row);
        if (decision === "always") this.#sql.grant.run(grantParams(answered));
        return answered;
      })
      .immediate();
  }

  async expire(id: string, now: number): Promise<ApprovalRequest | null> {
    this.#sql.expire.run(now, id, now);
    return this.#getSync(id);
  }

  async isGranted(agentId: string, tool: string, pattern: string): Promise<boolean> {
    return this.#sql.isGranted.get(agentId, tool, pattern) !== undefined;
  }

  async grants(): Promise<ApprovalGrant[]> {
    return this.#sql.grants.all().map(toApprovalGrant);
  }

  async revoke(agentId: string, tool: string, pattern?: string): Promise<ApprovalGrant[]> {
    const only = pattern ?? null;
    return this.#sql.revoke.all(agentId, tool, only, only).map(toApprovalGrant);
  }

  #getSync(id: string): ApprovalRequest | null {
    const row = this.#sql.get.get(id);
    return row ? toApprovalRequest(row) : null;
  }
}
