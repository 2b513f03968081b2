/** Pairing codes and the pairing tables' rows, alike for the SQLite and PostgreSQL stores. */
import { randomCode } from "../base/short-code.js";
import {
  type ChatPlatformKind,
  MAX_PENDING_PER_PLATFORM,
  PAIRING_CODE_TTL_MS,
  type PairedUser,
  type PairingApplicant,
  type PairingRequest,
} from "../ports/index.js";

/** A random 8-character pairing code. */
export function newPairingCode(): string {
  return randomCode(8);
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

/** A new code for a user who has no valid one. */
export function newPairingRequest(
  applicant: PairingApplicant,
  now: number,
  newCode: () => string,
): PairingRequest {
  return { ...applicant, code: newCode(), createdAt: now, expiresAt: now + PAIRING_CODE_TTL_MS };
}

/**
 * How many of the platform's oldest pending requests a new one replaces: enough to leave
 * room for it under {@link MAX_PENDING_PER_PLATFORM} (every adapter's rule).
 */
export function requestsToReplace(pendingOnPlatform: number): number {
  return Math.max(0, pendingOnPlatform - MAX_PENDING_PER_PLATFORM + 1);
}

/** The approval a valid request turns into. */
export function approvalOf(request: RequestRow, now: number): PairedUser & { chatId: string } {
  return {
    platform: request.platform,
    userId: request.user_id,
    userName: request.user_name,
    approvedAt: now,
    chatId: request.chat_id,
  };
}
