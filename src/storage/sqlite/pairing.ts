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
import type { Database } from "./database.js";

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
      oldestValid: db.prepare<[string, number, number], RequestRow>(
        "SELECT * FROM pairing_requests WHERE platform = ? AND expires_at > ? ORDER BY created_at, code LIMIT ?",
      ),
      dropCode: db.prepare<[string]>("DELETE FROM pairing_requests WHERE code = ?"),
      noteReplaced: db.prepare<[string, string, string, number]>(
        "INSERT INTO pairing_replacements (platform, user_id, user_name, replaced_at) VALUES (?, ?, ?, ?)",
      ),
      dropOldReplacements: db.prepare<[number]>(
        "DELETE FROM pairing_replacements WHERE replaced_at < ?",
      ),
      replacedSince: db.prepare<[number], { platform: ChatPlatformKind; n: number }>(
        "SELECT platform, COUNT(*) AS n FROM pairing_replacements WHERE replaced_at >= ? GROUP BY platform ORDER BY platform",
      ),
      clear: db.prepare("DELETE FROM pairing_requests"),
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

  async requestCode(applicant: PairingApplicant, now: number): Promise<PairingRequest> {
    return this.#db
      .transaction(() => {
        const existing = this.#sql.validOfUser.get(applicant.platform, applicant.userId, now);
        if (existing) return toRequest(existing);
        this.#sql.dropExpired.run(now);
        const pending = this.#sql.countValid.get(applicant.platform, now)?.n ?? 0;
        this.#replaceOldest(applicant.platform, requestsToReplace(pending), now);
        const request = newPairingRequest(applicant, now, this.#newCode);
        this.#sql.insertRequest.run(request);
        return request;
      })
      .immediate();
  }

  #replaceOldest(platform: ChatPlatformKind, count: number, now: number): void {
    if (count === 0) return;
    for (const oldest of this.#sql.oldestValid.all(platform, now, count)) {
      this.#sql.dropCode.run(oldest.code);
      this.#sql.noteReplaced.run(platform, oldest.user_id, oldest.user_name, now);
    }
    this.#sql.dropOldReplacements.run(now - PAIRING_REPLACEMENT_WINDOW_MS);
  }

  async clear(): Promise<number> {
    return this.#sql.clear.run().changes;
  }

  async replacedSince(since: number): Promise<PairingReplacements[]> {
    return this.#sql.replacedSince.all(since).map(({ platform, n }) => ({ platform, count: n }));
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

  async approve(code: string, now: number): Promise<(PairedUser & { chatId: string }) | null> {
    return this.#db
      .transaction(() => {
        const request = this.#sql.byCode.get(normalizeCode(code), now);
        if (!request) return null;
        const user = approvalOf(request, now);
        const { chatId: _chat, ...paired } = user;
        this.#sql.approve.run(paired);
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
