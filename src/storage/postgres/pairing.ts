/**
 * The {@link PairingStore} in PostgreSQL (migration 005): an approval made with
 * `picklebot pairing approve` on any host is seen by every process of the cluster at the
 * next message. Rows map, and codes are handed out, by the same functions as in SQLite.
 *
 * Requests of one platform are serialised by a transaction-scoped advisory lock, so two
 * processes never keep more than {@link MAX_PENDING_PER_PLATFORM} codes between them.
 */
import type pg from "pg";
import { normalizeCode } from "../../base/short-code.js";
import {
  type ChatPlatformKind,
  PAIRING_CODE_TTL_MS,
  PAIRING_REPLACEMENT_WINDOW_MS,
  type PairedUser,
  type PairingApplicant,
  type PairingReplacements,
  type PairingRequest,
  type PairingStore,
} from "../../ports/index.js";
import {
  approvalOf,
  newPairingCode,
  newPairingRequest,
  type RequestRow,
  requestsToReplace,
  toRequest,
  toUser,
  type UserRow,
} from "../pairing-rows.js";
import { inTransaction, queryRetrying, retryOnDisconnect } from "./database.js";

/** Options of {@link PostgresPairingStore}. */
export interface PostgresPairingStoreOptions {
  /** The pool from `openPostgres` (migrated); never closed here. */
  pool: pg.Pool;
  /** (Default: a random 8-character code, see `newPairingCode`) */
  newCode?: () => string;
}

const SQL = {
  approvedOne: "SELECT 1 FROM paired_users WHERE platform = $1 AND user_id = $2",
  lockPlatform: "SELECT pg_advisory_xact_lock(hashtext('picklebot_pairing:' || $1))",
  validOfUser: `SELECT * FROM pairing_requests WHERE platform = $1 AND user_id = $2 AND expires_at > $3
    ORDER BY created_at DESC LIMIT 1`,
  dropExpired: "DELETE FROM pairing_requests WHERE expires_at <= $1",
  countValid:
    "SELECT count(*)::int AS n FROM pairing_requests WHERE platform = $1 AND expires_at > $2",
  replaceOldest: `WITH oldest AS (
      DELETE FROM pairing_requests WHERE code IN (
        SELECT code FROM pairing_requests WHERE platform = $1 AND expires_at > $2
        ORDER BY created_at, code LIMIT $3)
      RETURNING platform, user_id, user_name)
    INSERT INTO pairing_replacements (platform, user_id, user_name, replaced_at)
    SELECT platform, user_id, user_name, $2 FROM oldest`,
  dropOldReplacements: "DELETE FROM pairing_replacements WHERE replaced_at < $1",
  replacedSince: `SELECT platform, count(*)::int AS n FROM pairing_replacements
    WHERE replaced_at >= $1 GROUP BY platform ORDER BY platform`,
  clear: "DELETE FROM pairing_requests",
  insertRequest: `INSERT INTO pairing_requests (code, platform, user_id, user_name, chat_id, created_at, expires_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)`,
  refuse: `INSERT INTO pairing_refusals (platform, user_id, refused_at) VALUES ($1, $2, $3)
    ON CONFLICT (platform, user_id) DO UPDATE SET refused_at = $3
    WHERE pairing_refusals.refused_at <= $3 - $4`,
  pending: "SELECT * FROM pairing_requests WHERE expires_at > $1 ORDER BY created_at",
  approved: "SELECT * FROM paired_users ORDER BY approved_at",
  byCode: "SELECT * FROM pairing_requests WHERE code = $1 AND expires_at > $2 FOR UPDATE",
  approve: `INSERT INTO paired_users (platform, user_id, user_name, approved_at) VALUES ($1, $2, $3, $4)
    ON CONFLICT (platform, user_id) DO UPDATE SET user_name = $3, approved_at = $4`,
  dropRequestsOf: "DELETE FROM pairing_requests WHERE platform = $1 AND user_id = $2",
  revoke: `DELETE FROM paired_users WHERE user_id = $1 AND ($2::text IS NULL OR platform = $2)
    RETURNING *`,
} as const;

/** Pairing requests and approvals in PostgreSQL. */
export class PostgresPairingStore implements PairingStore {
  readonly #pool: pg.Pool;
  readonly #newCode: () => string;

  constructor({ pool, newCode = newPairingCode }: PostgresPairingStoreOptions) {
    this.#pool = pool;
    this.#newCode = newCode;
  }

  async isApproved(platform: ChatPlatformKind, userId: string): Promise<boolean> {
    return (await queryRetrying(this.#pool, SQL.approvedOne, [platform, userId])).rows.length > 0;
  }

  // A retry after a lost COMMIT finds the code it stored: the user's valid one.
  requestCode(applicant: PairingApplicant, now: number): Promise<PairingRequest> {
    const { platform, userId } = applicant;
    return retryOnDisconnect(() =>
      inTransaction(this.#pool, async (client) => {
        await client.query(SQL.lockPlatform, [platform]);
        const existing = await client.query<RequestRow>(SQL.validOfUser, [platform, userId, now]);
        if (existing.rows[0]) return toRequest(existing.rows[0]);
        await client.query(SQL.dropExpired, [now]);
        const count = await client.query<{ n: number }>(SQL.countValid, [platform, now]);
        const replace = requestsToReplace(count.rows[0]?.n ?? 0);
        if (replace > 0) {
          await client.query(SQL.replaceOldest, [platform, now, replace]);
          await client.query(SQL.dropOldReplacements, [now - PAIRING_REPLACEMENT_WINDOW_MS]);
        }
        const request = newPairingRequest(applicant, now, this.#newCode);
        const { code, userName, chatId, createdAt, expiresAt } = request;
        const params = [code, platform, userId, userName, chatId, createdAt, expiresAt];
        await client.query(SQL.insertRequest, params);
        return request;
      }),
    );
  }

  async noteRefusal(platform: ChatPlatformKind, userId: string, now: number): Promise<boolean> {
    const params = [platform, userId, now, PAIRING_CODE_TTL_MS];
    return (await queryRetrying(this.#pool, SQL.refuse, params)).rowCount === 1;
  }

  async clear(): Promise<number> {
    return (await this.#pool.query(SQL.clear)).rowCount ?? 0;
  }

  async replacedSince(since: number): Promise<PairingReplacements[]> {
    const { rows } = await queryRetrying<{ platform: ChatPlatformKind; n: number }>(
      this.#pool,
      SQL.replacedSince,
      [since],
    );
    return rows.map(({ platform, n }) => ({ platform, count: n }));
  }

  async pending(now: number): Promise<PairingRequest[]> {
    return (await queryRetrying<RequestRow>(this.#pool, SQL.pending, [now])).rows.map(toRequest);
  }

  async approved(): Promise<PairedUser[]> {
    return (await queryRetrying<UserRow>(this.#pool, SQL.approved, [])).rows.map(toUser);
  }

  approve(code: string, now: number): Promise<(PairedUser & { chatId: string }) | null> {
    return inTransaction(this.#pool, async (client) => {
      const found = await client.query<RequestRow>(SQL.byCode, [normalizeCode(code), now]);
      const request = found.rows[0];
      if (!request) return null;
      const user = approvalOf(request, now);
      await client.query(SQL.approve, [user.platform, user.userId, user.userName, now]);
      await client.query(SQL.dropRequestsOf, [user.platform, user.userId]);
      return user;
    });
  }

  async revoke(userId: string, platform?: ChatPlatformKind): Promise<PairedUser[]> {
    const removed = await this.#pool.query<UserRow>(SQL.revoke, [userId, platform ?? null]);
    return removed.rows.map(toUser);
  }
}
