import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { UserError } from "../base/errors.js";

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
  mkdirSync(dir, { recursive: true });
  const announcementFile = join(dir, ANNOUNCEMENT_FILE);
  const db = new Database(join(dir, LOCK_FILE), { timeout: 0 });
  try {
    db.pragma("locking_mode = EXCLUSIVE");
    db.exec("BEGIN EXCLUSIVE");
  } catch {
    db.close();
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
