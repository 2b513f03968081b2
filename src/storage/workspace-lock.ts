import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { UserError } from "../base/errors.js";
import { databaseOpenError } from "./sqlite/database.js";

/** What a running server tells other commands about itself (`history/server.json`). */
export interface ServerAnnouncement {
  pid: number;
  /** `host:port` of its HTTP endpoint, once it listens. */
  http?: string;
}

/** A held workspace lock; released by `release()` or, whatever happens, when the process dies. */
export interface WorkspaceLock {
  /** Records the server's HTTP address for `picklebot status`. */
  announce(details: Omit<ServerAnnouncement, "pid">): void;
  release(): void;
}

const ANNOUNCEMENT_FILE = "server.json";

/** The lock file inside `history.path`: an SQLite file held in an exclusive transaction. */
export const LOCK_FILE = "server.lock";

/**
 * Takes the one-server-per-workspace lock (SQLite mode is one process). The lock is an
 * exclusive SQLite file lock, which the operating system drops when the process dies,
 * so a SIGKILLed server never leaves a stale lock behind.
 */
export function acquireWorkspaceLock(dir: string): WorkspaceLock {
  const announcementFile = join(dir, ANNOUNCEMENT_FILE);
  const lockFile = join(dir, LOCK_FILE);
  let db: Database.Database;
  try {
    mkdirSync(dir, { recursive: true });
    db = new Database(lockFile, { timeout: 0 });
  } catch (thrown) {
    throw databaseOpenError(lockFile, thrown);
  }
  try {
    db.pragma("locking_mode = EXCLUSIVE");
    db.exec("BEGIN EXCLUSIVE");
  } catch (thrown) {
    db.close();
    if (!isBusy(thrown)) throw databaseOpenError(lockFile, thrown);
    const pid = readAnnouncement(dir)?.pid;
    throw new UserError(
      `another picklebot server${pid ? ` (pid ${pid})` : ""} is already running on this workspace (lock ${join(dir, LOCK_FILE)}); stop it first, or use queue.backend: postgres to run several`,
    );
  }
  const announce = (details: Omit<ServerAnnouncement, "pid">) =>
    writeFileSync(announcementFile, `${JSON.stringify({ pid: process.pid, ...details })}\n`);
  announce({});
  return {
    announce,
    release() {
      rmSync(announcementFile, { force: true });
      db.close();
    },
  };
}

/** Whether SQLite refused a lock because another connection holds it. */
function isBusy(thrown: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(String((thrown as { code?: unknown }).code ?? ""));
}

/** The server running on this workspace, or null when none is. */
export function runningServer(dir: string): ServerAnnouncement | null {
  const announcement = readAnnouncement(dir);
  if (!announcement) return null;
  try {
    process.kill(announcement.pid, 0);
    return announcement;
  } catch {
    return null;
  }
}

function readAnnouncement(dir: string): ServerAnnouncement | null {
  try {
    const parsed = JSON.parse(
      readFileSync(join(dir, ANNOUNCEMENT_FILE), "utf8"),
    ) as ServerAnnouncement;
    return Number.isInteger(parsed.pid) ? parsed : null;
  } catch {
    return null;
  }
}
