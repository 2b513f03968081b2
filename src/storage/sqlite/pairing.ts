/**
 * The PairingStore port: chat users the owner admits without editing picklebot.yaml.
 *
 * Glossary
 * - **Pairing code**: 8 characters handed to a user who is not allowed; valid for an hour,
 *   at most {@link MAX_PENDING_PER_PLATFORM} pending per platform.
 * - **Paired user**: a user the owner approved with `picklebot pairing approve <code>`;
 *   admitted like one in `allowed_user_ids` until `pairing revoke`.
 * - **Refusal**: the reply that shows a user their id and code, at most once an hour each.
 */
import { randomInt } from "node:crypto";
import type { ChatPlatformKind } from "../../ports.js";
import type { Database } from "./database.js";

/** How long a pairing code is valid. */
export const PAIRING_CODE_TTL_MS = 60 * 60 * 1000;
/** Codes pending at once on one platform; more requests get no code. */
export const MAX_PENDING_PER_PLATFORM = 3;

/** A user who asked to be let in, and their code. Times are epoch milliseconds. */
export interface PairingRequest {
  code: string;
  platform: ChatPlatformKind;
  userId: string;
  userName: string;
  chatId: string;
  createdAt: number;
  expiresAt: number;
}

/** A user the owner approved. */
export interface PairedUser {
  platform: ChatPlatformKind;
  userId: string;
  userName: string;
  approvedAt: number;
}

/** Who asks for a code. */
export type PairingApplicant = Pick<PairingRequest, "platform" | "userId" | "userName" | "chatId">;

/** Durable pairing requests and approvals. */
export interface PairingStore {
  /** Whether the owner approved this user. */
  isApproved(platform: ChatPlatformKind, userId: string): Promise<boolean>;
  /**
   * The user's code: their valid one, or a new one when fewer than
   * {@link MAX_PENDING_PER_PLATFORM} are pending on the platform; null when full.
   */
  requestCode(applicant: PairingApplicant, now: number): Promise<PairingRequest | null>;
  /** Records a refusal at `now`; false (nothing changed) when the user had one within the hour. */
  noteRefusal(platform: ChatPlatformKind, userId: string, now: number): Promise<boolean>;
  /** Codes still valid, oldest first. */
  pending(now: number): Promise<PairingRequest[]>;
  /** Approved users, oldest first. */
  approved(): Promise<PairedUser[]>;
  /** Approves the user of a valid code (case-insensitive); null when no such code is valid. */
  approve(code: string, now: number): Promise<PairedUser | null>;
  /** Removes the approval of `userId` (on `platform`, or any); returns what was removed. */
  revoke(userId: string, platform?: ChatPlatformKind): Promise<PairedUser[]>;
}

/** Letters and digits without look-alikes (0/O, 1/I/L). */
const CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/** A random 8-character pairing code. */
export function newPairingCode(): string {
  let code = "";
  for (let i = 0; i < 8; i += 1) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/** A row of `pairing_requests`, as SQLite and PostgreSQL return it. */
export interface RequestRow {
  code: string;
  platform: ChatPlatformKind;
  user_id: string;
  user_name: string;
  chat_id: string;
  created_at: number;
  expires_at: number;
}

/** A row of `paired_users`. */
export interface UserRow {
  platform: ChatPlatformKind;
  user_id: string;
  user_name: string;
  approved_at: number;
}

/** Maps a stored request row, for every adapter. */
export const toRequest = (row: RequestRow): PairingRequest => ({
  code: row.code,
  platform: row.platform,
  userId: row.user_id,
  userName: row.user_name,
  chatId: row.chat_id,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
});

/** Maps a stored approval row, for every adapter. */
export const toUser = (row: UserRow): PairedUser => ({
  platform: row.platform,
  userId: row.user_id,
  userName: row.user_name,
  approvedAt: row.approved_at,
});

/**
 * A new code for a user who has no valid one, or null when
 * {@link MAX_PENDING_PER_PLATFORM} are already pending on the platform (every adapter's rule).
 */
export function newPairingRequest(
  applicant: PairingApplicant,
  pendingOnPlatform: number,
  now: number,
  newCode: () => string,
): PairingRequest | null {
  if (pendingOnPlatform >= MAX_PENDING_PER_PLATFORM) return null;
  return { ...applicant, code: newCode(), createdAt: now, expiresAt: now + PAIRING_CODE_TTL_MS };
}

/** The approval a valid request turns into. */
export function approvalOf(request: RequestRow, now: number): PairedUser {
  return {
    platform: request.platform,
    userId: request.user_id,
    userName: request.user_name,
    approvedAt: now,
  };
}

/** The {@link PairingStore} in picklebot's SQLite database (migration 004). */
export class SqlitePairingStore implements PairingStore {
  readonly #db: Database;
  readonly #newCode: () => string;
  readonly #sql;

  constructor({ db, newCode = newPairingCode }: { db: Database; newCode?: () => string }) {
    this.#db = db;
    this.#newCode = newCode;
    this.#sql = {
      approvedOne: db.prepare<[string, string]>(
        "SELECT 1 FROM paired_users WHERE platform = ? AND user_id = ?",
      ),
      validOfUser: db.prepare<[string, string, number], RequestRow>(
        "SELECT * FROM pairing_requests WHERE platform = ? AND user_id = ? AND expires_at > ? ORDER BY created_at DESC LIMIT 1",
      ),
      countValid: db.prepare<[string, number], { n: number }>(
        "SELECT COUNT(*) AS n FROM pairing_requests WHERE platform = ? AND expires_at > ?",
      ),
      dropExpired: db.prepare<[number]>("DELETE FROM pairing_requests WHERE expires_at <= ?"),
      insertRequest: db.prepare(
        "INSERT INTO pairing_requests (code, platform, user_id, user_name, chat_id, created_at, expires_at) VALUES (@code, @platform, @userId, @userName, @chatId, @createdAt, @expiresAt)",
      ),
      refuse: db.prepare(
        `INSERT INTO pairing_refusals (platform, user_id, refused_at) VALUES (@platform, @userId, @now)
         ON CONFLICT (platform, user_id) DO UPDATE SET refused_at = @now WHERE refused_at <= @now - @window`,
      ),
      pending: db.prepare<[number], RequestRow>(
        "SELECT * FROM pairing_requests WHERE expires_at > ? ORDER BY created_at",
      ),
      approved: db.prepare<[], UserRow>("SELECT * FROM paired_users ORDER BY approved_at"),
      byCode: db.prepare<[string, number], RequestRow>(
        "SELECT * FROM pairing_requests WHERE code = ? AND expires_at > ?",
      ),
      approve: db.prepare(
        `INSERT INTO paired_users (platform, user_id, user_name, approved_at) VALUES (@platform, @userId, @userName, @approvedAt)
         ON CONFLICT (platform, user_id) DO UPDATE SET user_name = @userName, approved_at = @approvedAt`,
      ),
      dropRequestsOf: db.prepare<[string, string]>(
        "DELETE FROM pairing_requests WHERE platform = ? AND user_id = ?",
      ),
      usersById: db.prepare<[string], UserRow>("SELECT * FROM paired_users WHERE user_id = ?"),
      removeUser: db.prepare<[string, string]>(
        "DELETE FROM paired_users WHERE platform = ? AND user_id = ?",
      ),
    };
  }

  async isApproved(platform: ChatPlatformKind, userId: string): Promise<boolean> {
    return this.#sql.approvedOne.get(platform, userId) !== undefined;
  }

  async requestCode(applicant: PairingApplicant, now: number): Promise<PairingRequest | null> {
    return this.#db
      .transaction(() => {
        const existing = this.#sql.validOfUser.get(applicant.platform, applicant.userId, now);
        if (existing) return toRequest(existing);
        this.#sql.dropExpired.run(now);
        const pending = this.#sql.countValid.get(applicant.platform, now)?.n ?? 0;
        const request = newPairingRequest(applicant, pending, now, this.#newCode);
        if (request) this.#sql.insertRequest.run(request);
        return request;
      })
      .immediate();
  }

  async noteRefusal(platform: ChatPlatformKind, userId: string, now: number): Promise<boolean> {
    const window = PAIRING_CODE_TTL_MS;
    return this.#sql.refuse.run({ platform, userId, now, window }).changes === 1;
  }

  async pending(now: number): Promise<PairingRequest[]> {
    return this.#sql.pending.all(now).map(toRequest);
  }

  async approved(): Promise<PairedUser[]> {
    return this.#sql.approved.all().map(toUser);
  }

  async approve(code: string, now: number): Promise<PairedUser | null> {
    return this.#db
      .transaction(() => {
        const request = this.#sql.byCode.get(code.trim().toUpperCase(), now);
        if (!request) return null;
        const user = approvalOf(request, now);
        this.#sql.approve.run(user);
        this.#sql.dropRequestsOf.run(request.platform, request.user_id);
        return user;
      })
      .immediate();
  }

  async revoke(userId: string, platform?: ChatPlatformKind): Promise<PairedUser[]> {
    return this.#db
      .transaction(() => {
        const users = this.#sql.usersById
          .all(userId)
          .filter((user) => platform === undefined || user.platform === platform);
        for (const user of users) this.#sql.removeUser.run(user.platform, user.user_id);
        return users.map(toUser);
      })
      .immediate();
  }
}
