/**
 * The protected paths of a workspace, which the file tools refuse even inside it:
 *
 * - secrets: `.env` and the config file under every name the loader reads it from
 *   (`picklebot.yaml`, `picklebot.yml`), and the file such a name is a symlink to (API
 *   keys, bot tokens, where the model is called, which commands MCP servers run), never
 *   read or written, whichever of them exists;
 * - history: the `history.path` folder (database, WAL, lock, jsonl), never read or written;
 * - control plane: `agents/`, `crons/` and `skills/`, never written unless the approval
 *   gate granted the call (a policy path rule naming the folder allowed it, or the owner
 *   approved it).
 *
 * Checked on real paths (no symlinks left), so a symlink leading into a protected path
 * is refused like the path itself; a hard link is matched by device and inode.
 */
import type { Stats } from "node:fs";
import { readdir, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { ToolError, toError } from "../../base/errors.js";
import { CONFIG_FILE_NAMES } from "../../config/index.js";
import type { ToolContext } from "../../ports/index.js";

/** The folders an agent's definition, crons and skills live in, relative to the workspace. */
export const CONTROL_PLANE_FOLDERS = ["agents", "crons", "skills"] as const;

/** The workspace files holding secrets or the config, relative to the workspace. */
export const SECRET_FILES = [".env", ...CONFIG_FILE_NAMES] as const;

/** Whether a file tool call reads only, or writes. */
export type FileAccess = "read" | "write";

/** The protected paths of one workspace, as real absolute paths. */
export interface ProtectedPaths {
  workspace: string;
  secrets: string[];
  history: string;
  controlPlane: string[];
}

/** The protected paths of the context's workspace and history folder. */
export async function protectedPathsOf(context: ToolContext): Promise<ProtectedPaths> {
  const workspace = await realpath(context.workspace);
  const history = await realpath(context.historyPath ?? join(workspace, "history")).catch(() =>
    resolve(workspace, context.historyPath ?? "history"),
  );
  const named = SECRET_FILES.map((name) => join(workspace, name));
  // The file the server loads, whatever it is called: a name may be a symlink.
  const targets = await Promise.all(named.map((file) => realpath(file).catch(() => file)));
  return {
    workspace,
    secrets: [...new Set([...named, ...targets])],
    history,
    controlPlane: CONTROL_PLANE_FOLDERS.map((name) => join(workspace, name)),
  };
}

/**
 * Refuses `realPath` when it is protected for `access`. `path` is the path as the model
 * gave it; when it differs from the real one (a symlink), the error says where it leads.
 *
 * @throws ToolError naming the path and why it is refused.
 */
export function checkNotProtected(
  paths: ProtectedPaths,
  realPath: string,
  path: string,
  access: FileAccess,
  context: ToolContext,
): void {
  const reason = protectionReason(paths, realPath, access, context);
  if (reason === null) return;
  const shown = relative(paths.workspace, realPath) || ".";
  const subject = shown === path ? `"${path}"` : `"${path}" leads to "${shown}", which`;
  throw new ToolError(`${subject} is protected: ${reason}`, { context: { path } });
}

function protectionReason(
  paths: ProtectedPaths,
  realPath: string,
  access: FileAccess,
  context: ToolContext,
): string | null {
  if (paths.secrets.includes(realPath)) {
    return "it holds the owner's secrets (API keys, bot tokens); file tools never read or write it, whatever the approvals policy says";
  }
  if (isAtOrBelow(paths.history, realPath)) {
    return "it is the history folder (database, WAL, lock, jsonl history); file tools never read or write it, whatever the approvals policy says";
  }
  const folder = paths.controlPlane.find((root) => isAtOrBelow(root, realPath));
  if (access === "write" && folder !== undefined && !context.controlPlaneWrite) {
    const name = relative(paths.workspace, folder);
    return `${name}/ is the agents' control plane (agents/, crons/, skills/); writes there are refused unless the agent's approvals policy has a rule for that path, e.g. write: {"${name}/**": ask} in AGENT.md`;
  }
  return null;
}

/**
 * Refuses a regular file with more than one link that is a hard link to a secret file or
 * a file of the history folder (same device and inode).
 *
 * @throws ToolError naming the path and the protected file it is linked to.
 */
export async function checkNotHardLinked(
  paths: ProtectedPaths,
  stats: Stats,
  path: string,
): Promise<void> {
  if (!stats.isFile() || stats.nlink <= 1) return;
  for (const file of [...paths.secrets, ...(await filesBelow(paths.history))]) {
    const linked = await stat(file).catch(() => null);
    if (linked && linked.dev === stats.dev && linked.ino === stats.ino) {
      const shown = relative(paths.workspace, file);
      throw new ToolError(
        `"${path}" is a hard link to "${shown}", which is protected; file tools never read or write it`,
        { context: { path } },
      );
    }
  }
}

async function filesBelow(folder: string): Promise<string[]> {
  try {
    const entries = await readdir(folder, { withFileTypes: true, recursive: true });
    return entries
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name));
  } catch (thrown) {
    const code = (toError(thrown) as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw thrown;
  }
}

/** True when `candidate` is `root` or below it (both absolute and normalised). */
export function isAtOrBelow(root: string, candidate: string): boolean {
  const fromRoot = relative(root, candidate);
  return (
    fromRoot === "" ||
    (!fromRoot.startsWith(`..${sep}`) && fromRoot !== ".." && !isAbsolute(fromRoot))
  );
}
