import { z } from "zod";
import type { Tool } from "../../ports/index.js";
import { defineTool } from "./define-tool.js";
import { writeInWorkspace } from "./workspace-file.js";

const writeInput = z.object({
  path: z.string().min(1).describe("File path, relative to the workspace."),
  content: z.string().describe("The complete new content of the file."),
});

/**
 * `write {path, content}`: creates or replaces a file in the workspace, creating its
 * parent folders. Returns `wrote N bytes to path`.
 */
export function createWriteTool(): Tool {
  return defineTool({
    name: "write",
    description:
      "Create or overwrite a file in the workspace with the given content. " +
      "Missing parent folders are created.",
    input: writeInput,
    async run({ path, content }, context) {
      await writeInWorkspace(context, path, content);
      return `wrote ${Buffer.byteLength(content, "utf8")} bytes to ${path}`;
    },
  });
}
