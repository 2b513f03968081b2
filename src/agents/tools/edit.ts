import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import type { Tool, ToolContext } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";
import { openInWorkspace, writeInWorkspace } from "./workspace-file.js";
import { fileSystemError } from "./workspace-path.js";

const editInput = z.object({
  path: z.string().min(1).describe("File path, relative to the workspace."),
  old_text: z
    .string()
    .min(1)
    .describe("Exact text to replace; it must occur exactly once in the file."),
  new_text: z.string().describe("The text that replaces old_text."),
});

/**
 * `edit {path, old_text, new_text}`: replaces the one exact occurrence of `old_text`.
 * Absent or repeated `old_text` is an error, so an edit never lands in the wrong place.
 */
export function createEditTool(): Tool {
  return defineTool({
    name: "edit",
    description:
      "Replace one exact occurrence of old_text with new_text in a workspace file. " +
      "old_text must appear exactly once; include surrounding lines to make it unique.",
    input: editInput,
    async run({ path, old_text: oldText, new_text: newText }, context) {
      const original = await readForEdit(context, path);
      const at = original.indexOf(oldText);
      if (at === -1) throw new ToolError(`old_text not found in ${path}`);
      const occurrences = countOccurrences(original, oldText);
      if (occurrences > 1) {
        throw new ToolError(
          `old_text occurs ${occurrences} times in ${path}; include more surrounding text to make it unique`,
        );
      }
      const edited = original.slice(0, at) + newText + original.slice(at + oldText.length);
      await writeInWorkspace(context, path, edited);
      return `edited ${path}: replaced 1 occurrence`;
    },
  });
}

/** The text of the file an edit changes, opened under the checks of a write. */
async function readForEdit(context: ToolContext, path: string): Promise<string> {
  const { handle, stats } = await openInWorkspace(context, path, "write");
  try {
    if (stats.isDirectory()) throw new ToolError(`"${path}" is a directory, not a file`);
    return await handle.readFile("utf8");
  } catch (thrown) {
    throw thrown instanceof ToolError ? thrown : fileSystemError(thrown, path);
  } finally {
    await handle.close();
  }
}

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + needle.length)) {
    count += 1;
  }
  return count;
}
