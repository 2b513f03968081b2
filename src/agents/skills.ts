/**
 * The skills of a workspace: `skills/<name>/` for every agent and `agents/<id>/skills/<name>/`
 * for one agent (it replaces a workspace skill of the same name for that agent). An agent
 * gets all of them unless its AGENT.md lists `skills`. The system prompt carries only a
 * listing (name, description, where it is), cut to a character budget; the `skill` tool
 * reads a skill's body and files when the agent uses it.
 */
import fs from "node:fs";
import path from "node:path";
import { UserError } from "../base/errors.js";
import { type AgentDefinition, subfolders } from "./definition.js";
import { loadSkillFolder, type SkillDefinition, type SkillScope } from "./skill-file.js";
import { isAtOrBelow } from "./tools/protected-paths.js";

/** What {@link loadSkills} found: the valid skills and one error per broken skill. */
export interface LoadedSkills {
  /** The skills of `skills/`, by name. */
  shared: ReadonlyMap<string, SkillDefinition>;
  /** The skills of `agents/<id>/skills/`, by agent id, then name. */
  byAgent: ReadonlyMap<string, ReadonlyMap<string, SkillDefinition>>;
  /** One per skill that was skipped, naming its file and the fix. */
  errors: UserError[];
}

/** The skills of an agent, and the names its AGENT.md lists that no skill has. */
export interface AgentSkills {
  /** Sorted by name, so the listing (and the prompt cache's prefix) stays stable. */
  skills: SkillDefinition[];
  missing: string[];
}

/** The listing of an agent's skills for its system prompt. */
export interface SkillListing {
  /** The text appended to the system prompt; empty when the agent has no skill. */
  text: string;
  /** The skills that did not fit in the budget, in name order. */
  leftOut: string[];
}

/** A workspace without skills. */
export const NO_SKILLS: LoadedSkills = { shared: new Map(), byAgent: new Map(), errors: [] };

/**
 * Loads every skill of the workspace. A broken skill becomes an error naming its file
 * and the fix, and is skipped; the others load.
 */
export function loadSkills(workspace: string): LoadedSkills {
  const errors: UserError[] = [];
  const root = fs.realpathSync(workspace);
  const load = (dir: string, scope: SkillScope) => {
    const skills = new Map<string, SkillDefinition>();
    for (const folder of subfolders(dir)) {
      try {
        checkInsideWorkspace(root, folder);
        const skill = loadSkillFolder(folder, scope);
        skills.set(skill.name, skill);
      } catch (thrown) {
        if (!(thrown instanceof UserError)) throw thrown;
        errors.push(thrown);
      }
    }
    return skills;
  };
  const shared = load(path.join(workspace, "skills"), { kind: "workspace" });
  const byAgent = new Map<string, ReadonlyMap<string, SkillDefinition>>();
  for (const agentFolder of subfolders(path.join(workspace, "agents"))) {
    const agentId = path.basename(agentFolder);
    const skills = load(path.join(agentFolder, "skills"), { kind: "agent", agentId });
    if (skills.size > 0) byAgent.set(agentId, skills);
  }
  return { shared, byAgent, errors };
}

/**
 * A skill folder that is a symlink out of the workspace is refused: its files could not
 * be read by the `skill` tool, which never leaves the workspace.
 */
function checkInsideWorkspace(root: string, folder: string): void {
  if (isAtOrBelow(root, fs.realpathSync(folder))) return;
  throw new UserError(
    `${folder}: leads outside the workspace (a symlink); copy the skill into the workspace instead of linking it.`,
    { context: { file: folder } },
  );
}

/**
 * The skills `agent` gets: its own and the workspace's (its own win on a name clash),
 * only those its AGENT.md `skills` lists when it lists some.
 */
export function skillsOfAgent(
  loaded: LoadedSkills,
  agent: Pick<AgentDefinition, "id" | "skills">,
): AgentSkills {
  const all = new Map([...loaded.shared, ...(loaded.byAgent.get(agent.id) ?? [])]);
  const wanted = agent.skills ?? [...all.keys()];
  return {
    skills: wanted
      .flatMap((name) => all.get(name) ?? [])
      .sort((a, b) => a.name.localeCompare(b.name)),
    missing: wanted.filter((name) => !all.has(name)),
  };
}

const LISTING_HEAD =
  "\n\n## Skills\n\n" +
  "Skills are instructions for particular tasks, kept out of this prompt until needed. " +
  "When a task matches a skill's description, call the `skill` tool with its name to read " +
  "its instructions first; read the files they mention with `skill` and `file` " +
  "(a path inside the skill's folder, e.g. references/guide.md).\n";

/**
 * The listing of `skills` for the system prompt: one line each (name, description, file
 * relative to the workspace), in name order, as many as fit in `maxChars` (the heading
 * included); the others are left out and named.
 */
export function skillListing(
  skills: readonly SkillDefinition[],
  workspace: string,
  maxChars: number,
): SkillListing {
  if (skills.length === 0) return { text: "", leftOut: [] };
  let text = LISTING_HEAD;
  const leftOut: string[] = [];
  for (const skill of skills) {
    const where = path.relative(workspace, skill.file);
    const line = `- ${skill.name}: ${skill.description.replace(/\s+/g, " ")} (${where})\n`;
    if (text.length + line.length > maxChars) leftOut.push(skill.name);
    else text += line;
  }
  return { text: leftOut.length === skills.length ? "" : text.trimEnd(), leftOut };
}

/** The warning for a listing over its budget: which skills were left out, and the fixes. */
export function listingBudgetWarning(agentId: string, leftOut: string[], maxChars: number): string {
  return (
    `agent "${agentId}": ${leftOut.length} skill(s) left out of the system prompt because the ` +
    `listing would pass skills.max_listing_chars (${maxChars}): ${leftOut.join(", ")}; ` +
    "raise skills.max_listing_chars in picklebot.yaml, shorten skill descriptions, or list " +
    "fewer skills in the agent's AGENT.md (skills: [...])"
  );
}
