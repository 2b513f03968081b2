/**
 * One Agent Skill: a folder holding `SKILL.md` (YAML front matter, then the instructions
 * in markdown) and optionally `scripts/`, `references/` and `assets/`, as the Agent Skills
 * format (agentskills.io) specifies it. Only the front matter is read here; the body and
 * the other files are read when the agent asks for them (the `skill` tool).
 */
import path from "node:path";
import { z } from "zod";
import { UserError } from "../base/errors.js";
import { userErrorFromIssues } from "../config/issues.js";
import { parseFrontMatterFile, readFolderFile } from "./front-matter.js";

/** The file name of a skill inside its folder. */
export const SKILL_FILE_NAME = "SKILL.md";

/** A skill name: lowercase letters and digits, single hyphens between them, 1–64 characters. */
export const SKILL_NAME_PATTERN = /^(?=.{1,64}$)[a-z0-9]+(-[a-z0-9]+)*$/;

/** {@link SKILL_NAME_PATTERN} in words, for error messages. */
export const SKILL_NAME_RULE =
  "a skill name: 1 to 64 lowercase letters, digits and hyphens, not starting or ending " +
  'with a hyphen and without "--" (e.g. pdf-forms)';

/** Where a skill comes from: every agent's `skills/`, or one agent's `agents/<id>/skills/`. */
export type SkillScope = { kind: "workspace" } | { kind: "agent"; agentId: string };

/** A skill's front matter, checked; its body stays on disk until used. */
export interface SkillDefinition {
  /** Front matter `name`, equal to the folder name. */
  name: string;
  /** Front matter `description`: what the skill does and when to use it (≤ 1024 chars). */
  description: string;
  /** Front matter `license`, if any. */
  license?: string;
  /** Front matter `compatibility`: what the skill needs to run (≤ 500 chars), if any. */
  compatibility?: string;
  /** Front matter `metadata`: free key/value pairs. (Default: none) */
  metadata: Record<string, string>;
  /** Front matter `allowed-tools`, split on spaces; informative only. (Default: none) */
  allowedTools: string[];
  /** Absolute path of the skill's folder. */
  folder: string;
  /** Absolute path of its SKILL.md. */
  file: string;
  scope: SkillScope;
}

const skillFieldsSchema = z.strictObject({
  name: z.string().regex(SKILL_NAME_PATTERN).describe(SKILL_NAME_RULE),
  description: z
    .string()
    .trim()
    .min(1)
    .max(1024)
    .describe("text of 1 to 1024 characters saying what the skill does and when to use it"),
  license: z.string().min(1).optional(),
  compatibility: z.string().min(1).max(500).optional(),
  metadata: z.record(z.string(), z.string()).optional(),
  "allowed-tools": z.string().optional(),
});

/**
 * Reads `<folder>/SKILL.md` and checks it.
 *
 * @throws UserError naming the file, the field and the fix.
 */
export function loadSkillFolder(folder: string, scope: SkillScope): SkillDefinition {
  const file = path.join(folder, SKILL_FILE_NAME);
  const text = readFolderFile(
    folder,
    SKILL_FILE_NAME,
    "front matter with name and description, then the instructions",
  );
  return parseSkillFile(text, file, scope);
}

/** Parses one SKILL.md; its folder name must be its `name`. */
function parseSkillFile(text: string, file: string, scope: SkillScope): SkillDefinition {
  const folder = path.dirname(file);
  const { fields } = parseFrontMatterFile(
    text,
    file,
    "name, description, optional license, compatibility, metadata, allowed-tools",
  );
  const result = skillFieldsSchema.safeParse(fields, { reportInput: true });
  if (!result.success) throw userErrorFromIssues(file, result.error.issues, skillFieldsSchema);
  checkNameIsFolder(result.data.name, file);
  const skill = result.data;
  return {
    name: skill.name,
    description: skill.description,
    ...(skill.license === undefined ? {} : { license: skill.license }),
    ...(skill.compatibility === undefined ? {} : { compatibility: skill.compatibility }),
    metadata: skill.metadata ?? {},
    allowedTools: skill["allowed-tools"]?.split(/\s+/).filter(Boolean) ?? [],
    folder,
    file,
    scope,
  };
}

function checkNameIsFolder(name: string, file: string): void {
  const folder = path.basename(path.dirname(file));
  if (name === folder) return;
  throw new UserError(
    `${file}: name: "${name}" differs from its folder "${folder}"; rename the folder or change the name so they match.`,
    { context: { file, key: "name" } },
  );
}
