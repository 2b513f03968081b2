import { readdir, realpath } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { ToolError } from "../../base/errors.js";
import { didYouMean } from "../../config/suggest.js";
import type { Tool, ToolContext } from "../../ports/index.js";
import { parseFrontMatterFile } from "../front-matter.js";
import { SKILL_FILE_NAME, type SkillDefinition } from "../skill-file.js";
import { defineTool } from "./define-tool.js";
import { isAtOrBelow } from "./protected-paths.js";
import { readWorkspaceText } from "./read.js";
import { resolveInWorkspace } from "./workspace-path.js";

/** Files of a skill's folder named after its instructions. */
const LISTED_FILES = 100;

const skillInput = z.object({
  name: z.string().min(1).describe("The skill's name, as the system prompt lists it."),
  file: z
    .string()
    .min(1)
    .optional()
    .describe(
      "A file of the skill, relative to its folder (e.g. references/guide.md). Leave out to get the skill's instructions.",
    ),
});

/**
 * `skill {name, file?}`: the instructions of one of the agent's skills (the body of its
 * SKILL.md, read now, so an edit counts at once), followed by the list of its other files;
 * or, with `file`, the text of one of them. A file must stay inside the skill's folder
 * (after symlinks), and every read goes through the workspace's checks (read.ts).
 */
export function createSkillTool(skills: readonly SkillDefinition[]): Tool {
  const byName = new Map(skills.map((skill) => [skill.name, skill]));
  return defineTool({
    name: "skill",
    description:
      "Load one of your skills (listed under Skills in the system prompt): without `file`, " +
      "its instructions and the list of its files; with `file`, that file of the skill.",
    input: skillInput,
    async run({ name, file }, context) {
      const skill = byName.get(name) ?? unknownSkill(name, [...byName.keys()]);
      return file === undefined
        ? instructionsOf(skill, context)
        : readWorkspaceText(context, await skillFilePath(skill, file, context));
    },
  });
}

function unknownSkill(name: string, known: string[]): never {
  if (known.length === 0) throw new ToolError(`skill: this agent has no skills`);
  const suggestion = didYouMean(name, known);
  throw new ToolError(
    `skill: no skill "${name}"${suggestion ? `; ${suggestion}` : ""} (this agent's skills: ${known.sort().join(", ")})`,
  );
}

async function instructionsOf(skill: SkillDefinition, context: ToolContext): Promise<string> {
  const relativeFile = path.relative(context.workspace, skill.file);
  const text = await readWorkspaceText(context, relativeFile);
  const { body } = parseFrontMatterFile(text, relativeFile, "name, description");
  const files = await filesOf(skill.folder);
  if (files.length === 0) return body;
  const more = files.length > LISTED_FILES ? ` and ${files.length - LISTED_FILES} more` : "";
  return (
    `${body}\n\n[Files of skill "${skill.name}" (read one with skill {name: "${skill.name}", ` +
    `file: "<path>"}): ${files.slice(0, LISTED_FILES).join(", ")}${more}]`
  );
}

/** The skill's files besides SKILL.md, relative to its folder, sorted. */
async function filesOf(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(folder, path.join(entry.parentPath, entry.name)))
    .filter(
      (file) =>
        file !== SKILL_FILE_NAME && !file.split(path.sep).some((part) => part.startsWith(".")),
    )
    .sort();
}

/**
 * The path (relative to the workspace) of `file` of the skill, refused when it leads out
 * of the skill's folder (`..`, an absolute path, a symlink).
 */
async function skillFilePath(
  skill: SkillDefinition,
  file: string,
  context: ToolContext,
): Promise<string> {
  const checked = await resolveInWorkspace(context.workspace, path.resolve(skill.folder, file));
  const folder = await realpath(skill.folder);
  if (!isAtOrBelow(folder, checked)) {
    throw new ToolError(
      `skill: "${file}" is outside the folder of skill "${skill.name}"; give a path inside it, e.g. references/guide.md`,
      { context: { path: file } },
    );
  }
  return path.relative(await realpath(context.workspace), checked);
}
