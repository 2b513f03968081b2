import { lstat, readlink, realpath } from "node:fs/promises";
import { basename, dirname, resolve } from "node:path";
import { ToolError, toError } from "../../base/errors.js";
import { isAtOrBelow } from "./protected-paths.js";

/** Symlink hops followed before giving up, like the kernel's ELOOP limit. */
const MAX_SYMLINK_HOPS = 40;

/**
 * Resolves a path given by the model to the real absolute path it names, and refuses
 * any path that ends up outside the workspace: `..`, absolute paths elsewhere, and
 * symlinks (also dangling ones, and symlinked folders a new file would be written
 * into). Absolute paths inside the workspace are accepted. The returned path has no
 * symlinks left in its existing part, so using it touches exactly what was checked.
 *
 * @throws ToolError when the path is outside the workspace.
 */
export async function resolveInWorkspace(workspace: string, path: string): Promise<string> {
  const realWorkspace = await realpath(workspace);
  const realTarget = await resolveReal(resolve(workspace, path), 0);
  if (!isAtOrBelow(realWorkspace, realTarget)) {
    throw new ToolError(
      `path "${path}" is outside the workspace; use a path inside ${realWorkspace}`,
      { context: { path } },
    );
  }
  return realTarget;
}

/**
 * Like `realpath`, but also for paths that do not exist yet: the deepest existing
 * ancestor is resolved and the missing rest appended. Dangling symlinks are followed
 * by hand, because writing through one would create its target.
 */
async function resolveReal(absolutePath: string, hops: number): Promise<string> {
  if (hops > MAX_SYMLINK_HOPS) {
    throw new ToolError(`path "${absolutePath}" has too many levels of symlinks`);
  }
  try {
    return await realpath(absolutePath);
  } catch (thrown) {
    const code = (toError(thrown) as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") throw thrown;
  }
  const danglingTarget = await symlinkTarget(absolutePath);
  if (danglingTarget !== null) {
    return resolveReal(resolve(dirname(absolutePath), danglingTarget), hops + 1);
  }
  const parent = dirname(absolutePath);
  if (parent === absolutePath) return absolutePath;
  return resolve(await resolveReal(parent, hops), basename(absolutePath));
}

async function symlinkTarget(path: string): Promise<string | null> {
  try {
    const stats = await lstat(path);
    return stats.isSymbolicLink() ? await readlink(path) : null;
  } catch {
    return null;
  }
}

/**
 * Turns a failed file-system call into a ToolError with one sentence the model can
 * act on; `path` is the path as the model gave it.
 */
export function fileSystemError(thrown: unknown, path: string): ToolError {
  const error = toError(thrown) as NodeJS.ErrnoException;
  const reasons: Record<string, string> = {
    ENOENT: `"${path}" does not exist`,
    ENOTDIR: `"${path}" is not below a folder (a part of the path is a file)`,
    EISDIR: `"${path}" is a directory, not a file`,
    EACCES: `permission denied for "${path}"`,
    EPERM: `permission denied for "${path}"`,
    ENOSPC: `no space left on the device to write "${path}"`,
    ELOOP: `"${path}" became a symlink while it was being opened; file tools do not follow it`,
  };
  const reason = (error.code && reasons[error.code]) ?? `"${path}": ${error.message}`;
  return new ToolError(reason, { cause: error, context: { path } });
}
