/**
 * Opening and writing files of the workspace with the boundary enforced at open time, not
 * only checked before: a folder swapped for a symlink between the check and the open must
 * not let a tool read or write outside the workspace or into a protected path.
 *
 * The path is resolved and checked first (resolveInWorkspace, protected-paths.ts), then
 * opened without following a symlink in its last part (O_NOFOLLOW), and the opened
 * descriptor's real path (`/proc/self/fd/<fd>`) must still be the checked one. A write
 * opens the checked folder the same way and creates a temporary file in it through the
 * descriptor, then renames it over the target, so a swap of any folder on the way cannot
 * redirect it. Without `/proc` (not Linux), the descriptor's device and inode are
 * compared with the checked path's instead, which narrows the race without closing it.
 */
import { randomUUID } from "node:crypto";
import { constants, existsSync, type Stats } from "node:fs";
import {
  chmod,
  type FileHandle,
  lstat,
  mkdir,
  open,
  realpath,
  rename,
  stat,
  unlink,
  writeFile,
} from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { ToolError } from "../../base/errors.js";
import type { ToolContext } from "../../ports/index.js";
import {
  checkNotHardLinked,
  checkNotProtected,
  type FileAccess,
  type ProtectedPaths,
  protectedPathsOf,
} from "./protected-paths.js";
import { fileSystemError, resolveInWorkspace } from "./workspace-path.js";

/** Where Linux shows the open descriptors of this process as links to what they opened. */
const DESCRIPTORS = "/proc/self/fd";

const canVerifyDescriptors = existsSync(DESCRIPTORS);

/** A file or folder of the workspace, opened read-only and checked. */
export interface OpenedFile {
  handle: FileHandle;
  /** `fstat` of the descriptor: what was opened, not what the path names now. */
  stats: Stats;
  /** A path that names the opened file itself (through `/proc` where it exists). */
  pinnedPath: string;
}

/**
 * Opens `path` (as the model gave it) read-only: inside the workspace, not protected for
 * `access`, no symlink swapped in on the way, not a hard link to a protected file. The
 * caller closes the handle.
 *
 * @throws ToolError naming the path and why it is refused.
 */
export async function openInWorkspace(
  context: ToolContext,
  path: string,
  access: FileAccess,
): Promise<OpenedFile> {
  const { paths, checked } = await checkPath(context, path, access);
  const handle = await open(checked, constants.O_RDONLY | constants.O_NOFOLLOW).catch(
    (thrown: unknown) => {
      throw fileSystemError(thrown, path);
    },
  );
  try {
    await verifyOpened(handle, checked, path);
    const stats = await handle.stat();
    await checkNotHardLinked(paths, stats, path);
    return { handle, stats, pinnedPath: pinnedPathOf(handle, checked) };
  } catch (thrown) {
    await handle.close();
    throw thrown;
  }
}

/**
 * Creates or replaces the file at `path` with `content` under the same checks as
 * {@link openInWorkspace} for a write: a temporary file in the opened, verified folder,
 * renamed over the target (keeping its mode). Missing parent folders are created.
 *
 * @throws ToolError naming the path and why it is refused or failed.
 */
export async function writeInWorkspace(
  context: ToolContext,
  path: string,
  content: string,
): Promise<void> {
  const { paths, checked } = await checkPath(context, path, "write");
  const folder = dirname(checked);
  const handle = await openFolder(folder, path);
  try {
    await verifyOpened(handle, folder, path);
    const target = join(pinnedPathOf(handle, folder), basename(checked));
    const existing = await lstat(target).catch(() => null);
    if (existing?.isDirectory()) throw new ToolError(`"${path}" is a directory, not a file`);
    if (existing) await checkNotHardLinked(paths, existing, path);
    await replaceFile(target, content, existing, path);
  } finally {
    await handle.close();
  }
}

/** The real path `path` names, checked to be inside the workspace and not protected. */
async function checkPath(
  context: ToolContext,
  path: string,
  access: FileAccess,
): Promise<{ paths: ProtectedPaths; checked: string }> {
  const paths = await protectedPathsOf(context);
  const checked = await resolveInWorkspace(context.workspace, path);
  checkNotProtected(paths, checked, path, access, context);
  return { paths, checked };
}

async function openFolder(folder: string, path: string): Promise<FileHandle> {
  try {
    await mkdir(folder, { recursive: true });
    return await open(folder, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch (thrown) {
    throw fileSystemError(thrown, path);
  }
}

async function replaceFile(
  target: string,
  content: string,
  existing: Stats | null,
  path: string,
): Promise<void> {
  const temporary = join(dirname(target), `.${basename(target)}.${randomUUID()}.tmp`);
  try {
    await writeFile(temporary, content, { encoding: "utf8", flag: "wx" });
    if (existing) await chmod(temporary, existing.mode & 0o7777);
    await rename(temporary, target);
  } catch (thrown) {
    await unlink(temporary).catch(() => undefined);
    throw fileSystemError(thrown, path);
  }
}

/**
 * Refuses a descriptor whose file is not the one at `checked`: a folder on the way was
 * swapped for a symlink after the check.
 */
async function verifyOpened(handle: FileHandle, checked: string, path: string): Promise<void> {
  const same = canVerifyDescriptors
    ? (await realpath(`${DESCRIPTORS}/${handle.fd}`)) === checked
    : sameFile(await handle.stat(), await stat(checked).catch(() => null));
  if (!same) {
    throw new ToolError(
      `"${path}" changed while it was being opened (a folder on the way became a symlink); refused`,
      { context: { path } },
    );
  }
}

function sameFile(opened: Stats, named: Stats | null): boolean {
  return named !== null && opened.dev === named.dev && opened.ino === named.ino;
}

function pinnedPathOf(handle: FileHandle, checked: string): string {
  return canVerifyDescriptors ? `${DESCRIPTORS}/${handle.fd}` : checked;
}
