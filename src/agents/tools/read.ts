import { type FileHandle, readdir } from "node:fs/promises";
import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import type { Tool, ToolContext } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";
import { openInWorkspace } from "./workspace-file.js";
import { fileSystemError } from "./workspace-path.js";

/** Bytes of a file `read` returns; the rest is cut with a note. */
export const READ_MAX_BYTES = 256 * 1024;

/** Bytes looked at for a NUL byte, the sign of a binary file (as git does). */
const BINARY_SNIFF_BYTES = 8 * 1024;

/** Entries of a directory named in the error when `read` is given one. */
const LISTED_ENTRIES = 100;

const readInput = z.object({
  path: z.string().min(1).describe("File path, relative to the workspace."),
  offset: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe("Byte to start reading at (default 0): the offset a cut result names, to read on."),
});

/**
 * `read {path, offset}`: the text of a file in the workspace from byte `offset`, cut at {@link READ_MAX_BYTES}
 * with a note. Binary files are refused. A directory is an error whose message lists
 * its entries, so the model can pick a file without needing `bash`.
 */
export function createReadTool(): Tool {
  return defineTool({
    name: "read",
    description:
      "Read a text file from the workspace. Returns its content (at most 256 KiB from " +
      "`offset`). Given a directory, the error lists its entries.",
    input: readInput,
    run: ({ path, offset = 0 }, context) => readWorkspaceText(context, path, offset),
  });
}

/**
 * The text of a workspace file as `read` returns it: opened with the workspace's checks
 * (workspace-file.ts), from byte `offset`, cut at {@link READ_MAX_BYTES} with a note.
 *
 * @throws ToolError for a path refused, a directory (listing its entries), a binary file.
 */
export async function readWorkspaceText(
  context: ToolContext,
  path: string,
  offset = 0,
): Promise<string> {
  const { handle, stats, pinnedPath } = await openInWorkspace(context, path, "read");
  try {
    if (stats.isDirectory()) throw await directoryError(pinnedPath, path);
    if (!stats.isFile()) throw new ToolError(`"${path}" is not a regular file`);
    const head = await readHead(handle, path, offset, READ_MAX_BYTES + 1);
    return describeHead(head, path, offset, stats.size);
  } finally {
    await handle.close();
  }
}

function describeHead(head: Buffer, path: string, offset: number, size: number): string {
  if (head.subarray(0, BINARY_SNIFF_BYTES).includes(0)) {
    throw new ToolError(`"${path}" is a binary file (${size} bytes); read returns text files only`);
  }
  if (offset >= size && size > 0)
    return `(offset ${offset} is at or past the end of "${path}", which has ${size} bytes)`;
  if (head.length <= READ_MAX_BYTES) return head.toString("utf8");
  const shown = head.subarray(0, READ_MAX_BYTES).toString("utf8");
  const next = offset + READ_MAX_BYTES;
  return `${shown}\n\n[truncated: "${path}" has ${size} bytes; bytes ${offset}–${next} are shown; read on with offset ${next}]`;
}

async function readHead(
  file: FileHandle,
  path: string,
  offset: number,
  maxBytes: number,
): Promise<Buffer> {
  try {
    const buffer = Buffer.alloc(maxBytes);
    let filled = 0;
    while (filled < maxBytes) {
      const { bytesRead } = await file.read(buffer, filled, maxBytes - filled, offset + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    return buffer.subarray(0, filled);
  } catch (thrown) {
    throw fileSystemError(thrown, path);
  }
}

async function directoryError(absolute: string, path: string): Promise<ToolError> {
  const entries = await readdir(absolute, { withFileTypes: true });
  const names = entries
    .map((entry) => (entry.isDirectory() ? `${entry.name}/` : entry.name))
    .sort();
  if (names.length === 0) return new ToolError(`"${path}" is an empty directory, not a file`);
  const shown = names.slice(0, LISTED_ENTRIES).join(", ");
  const more = names.length > LISTED_ENTRIES ? ` and ${names.length - LISTED_ENTRIES} more` : "";
  return new ToolError(
    `"${path}" is a directory, not a file; read one of its entries: ${shown}${more}`,
  );
}
