/**
 * `picklebot backup FILE` and `picklebot restore FILE` (docs/operations/deploy.md, "Backups"): the
 * SQLite database copied while the server runs, and put back while none does; the files
 * people sent in chats (the history's `media/`) are copied beside it, to `FILE.media/`,
 * and the stored copies of the files the outbox sends (`outbox-files/`, so a pending
 * `send_file` or spoken reply is still sent after a restore) to `FILE.outbox-files/`.
 * PostgreSQL and JSONL keep data elsewhere; the commands say what to use instead.
 */

import { existsSync } from "node:fs";
import { cp } from "node:fs/promises";
import { join, resolve } from "node:path";
import { Command } from "commander";
import { UserError } from "../base/errors.js";
import { OUTBOX_FILES_FOLDER } from "../chat/outbox-files.js";
import type { Config } from "../config/index.js";
import { backupDatabase, restoreDatabase } from "../storage/sqlite/backup.js";
import { openDatabase } from "../storage/sqlite/database.js";
import { DATABASE_FILE } from "../storage/sqlite/index.js";
import { acquireWorkspaceLock } from "../storage/workspace-lock.js";
import { loadWorkspace } from "./context.js";
import { printLine } from "./output.js";

/** The `backup` command. */
export function backupCommand(): Command {
  return new Command("backup")
    .description("copy the workspace's SQLite database to FILE (safe while the server runs)")
    .argument("<file>", "where to write the backup (replaced if it exists)")
    .action(async (file: string, _options: object, command: Command) => {
      const { config } = loadWorkspace(command);
      refusePostgres(config, "backup", "pg_dump --format=custom --file=picklebot.dump");
      const target = resolve(file);
      await backupDatabase(databasePath(config), target);
      printLine(`backed up ${databasePath(config)} to ${target}`);
      if (await copyMedia(mediaFolder(config), `${target}.media`)) {
        printLine(`copied the files sent in chats (${mediaFolder(config)}) to ${target}.media`);
      }
      if (await copyMedia(outboxFilesFolder(config), `${target}.${OUTBOX_FILES_FOLDER}`)) {
        printLine(
          `copied the files waiting in the outbox (${outboxFilesFolder(config)}) to ${target}.${OUTBOX_FILES_FOLDER}`,
        );
      }
      if (config.history.backend === "jsonl") {
        printLine(
          `history.backend is jsonl: the conversations are the .jsonl files in ${config.history.path}, not in this backup; copy them too (e.g. tar -czf sessions.tgz -C ${config.history.path} .)`,
        );
      }
    });
}

/** The `restore` command. */
export function restoreCommand(): Command {
  return new Command("restore")
    .description("replace the workspace's SQLite database with a backup (stop the server first)")
    .argument("<file>", "a file written by picklebot backup")
    .action(async (file: string, _options: object, command: Command) => {
      const { config } = loadWorkspace(command);
      refusePostgres(config, "restore", "pg_restore --clean --dbname=... picklebot.dump");
      const lock = acquireLockForRestore(config);
      try {
        const target = databasePath(config);
        const outcome = await restoreDatabase(resolve(file), target, new Date(), (path) =>
          openDatabase(path).close(),
        );
        printLine(`restored ${resolve(file)} to ${target}`);
        if (await copyMedia(`${resolve(file)}.media`, mediaFolder(config))) {
          printLine(`restored the files sent in chats from ${resolve(file)}.media`);
        }
        const outboxCopies = `${resolve(file)}.${OUTBOX_FILES_FOLDER}`;
        if (await copyMedia(outboxCopies, outboxFilesFolder(config))) {
          printLine(`restored the files waiting in the outbox from ${outboxCopies}`);
        }
        if (outcome.keptAside)
          printLine(`the database it replaced is kept as ${outcome.keptAside}`);
      } finally {
        lock.release();
      }
    });
}

/** The history's media folder (agents/media/store.ts). */
function mediaFolder(config: Config): string {
  return join(config.history.path, "media");
}

/** The history's copies of the outbox's files (chat/outbox-files.ts). */
function outboxFilesFolder(config: Config): string {
  return join(config.history.path, OUTBOX_FILES_FOLDER);
}

/**
 * Copies a media folder (or the outbox's copies) into another; false when there is none. Its files are named by
 * their content, so a file already there is the same file and is kept.
 */
async function copyMedia(from: string, to: string): Promise<boolean> {
  if (!existsSync(from)) return false;
  await cp(from, to, { recursive: true, force: false, errorOnExist: false });
  return true;
}

function databasePath(config: Config): string {
  return join(config.history.path, DATABASE_FILE);
}

/** The workspace lock, or a UserError saying which server holds it and to stop it. */
function acquireLockForRestore(config: Config) {
  try {
    return acquireWorkspaceLock(config.history.path);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new UserError(`restore refused: ${reason}`, { cause: error });
  }
}

function refusePostgres(config: Config, command: string, tool: string): void {
  if (config.queue.backend !== "postgres" && config.history.backend !== "postgres") return;
  throw new UserError(
    `picklebot ${command} works on the SQLite database; this workspace keeps its data in PostgreSQL (queue.url in picklebot.yaml): use ${tool} (docs/operations/deploy.md, "Backups")`,
  );
}
