/**
 * The agent catalog: a workspace's agent definitions and skills, loaded from disk and
 * loaded again when the files change (the server's definitions watcher calls
 * {@link AgentCatalog.load}).
 *
 * Its `agents` and `broken` maps are the same objects for the catalog's whole life and
 * are refilled in place by each load, so everything handed them (the runner, the budget
 * guard, `/healthz`) sees the new definitions at its next lookup. A turn resolves its
 * agent and skills once, when it starts: a running turn finishes with the definitions it
 * started with, and the next turn uses the new ones.
 *
 * Each load reports only what is new since the load before (an agent added, changed or
 * removed; a broken file; a warning), so a broken file is reported once per change, not
 * on every turn or every reload.
 */
import { UserError } from "../base/errors.js";
import { type AgentDefinition, builtInAgent, loadAgents } from "./definition.js";
import {
  type LoadedSkills,
  listingBudgetWarning,
  loadSkills,
  NO_SKILLS,
  skillListing,
  skillsOfAgent,
} from "./skills.js";

/** What one load found that the load before had not. */
export interface CatalogChanges {
  /** Ids of agents that appeared, changed (their AGENT.md) or disappeared. */
  added: string[];
  changed: string[];
  removed: string[];
  /** Names of skills that appeared, changed (front matter or place) or disappeared. */
  skills: string[];
  /** Broken AGENT.md and SKILL.md files not reported by the load before. */
  errors: UserError[];
}

/** What the skill listings are checked against. */
export interface ListingSettings {
  workspace: string;
  /** `skills.max_listing_chars` of picklebot.yaml. */
  maxListingChars: number;
  /** `default_agent`: the built-in agent gets the workspace's skills when `agents/` lacks it. */
  defaultAgentId: string;
}

/** A sentence saying why `agent` cannot run with this workspace's config, or null. */
export type AgentCheck = (agent: AgentDefinition) => string | null;

/** Moves the agents `check` fails from `agents` to `broken`; returns their errors. */
function breakFailing(
  agents: Map<string, AgentDefinition>,
  broken: Map<string, UserError>,
  check: AgentCheck,
): UserError[] {
  const errors: UserError[] = [];
  for (const agent of [...agents.values()]) {
    const problem = check(agent);
    if (problem === null) continue;
    const error = new UserError(problem, { context: { file: agent.source, key: "tools" } });
    agents.delete(agent.id);
    broken.set(agent.id, error);
    errors.push(error);
  }
  return errors;
}

/** The live agent definitions and skills of a workspace. */
export class AgentCatalog {
  /** The valid agents, by id; refilled in place by {@link load}. */
  readonly agents = new Map<string, AgentDefinition>();
  /** The agents whose AGENT.md is broken, by id: they do not run (fail closed). */
  readonly broken = new Map<string, UserError>();
  readonly #workspace: string;
  #skills: LoadedSkills = NO_SKILLS;
  #reportedErrors = new Set<string>();
  #reportedWarnings = new Set<string>();
  #check: AgentCheck = () => null;

  constructor(workspace: string) {
    this.#workspace = workspace;
  }

  /**
   * From now on, an agent for which `check` gives a sentence is broken with it (an
   * AGENT.md that parses but names what the config lacks, such as an MCP server). Applies
   * at once; returns the errors of the agents it broke now.
   */
  checkAgents(check: AgentCheck): UserError[] {
    this.#check = check;
    const errors = breakFailing(this.agents, this.broken, check);
    for (const error of errors) this.#reportedErrors.add(error.message);
    return errors;
  }

  /** The skills of the last load. */
  get skills(): LoadedSkills {
    return this.#skills;
  }

  /** Reads every AGENT.md and SKILL.md again and says what changed since the last load. */
  load(): CatalogChanges {
    const before = new Map(this.agents);
    const skillsBefore = skillFingerprints(this.#skills);
    const { agents, broken, errors } = loadAgents(this.#workspace);
    errors.push(...breakFailing(agents, broken, this.#check));
    const skills = loadSkills(this.#workspace);
    refill(this.agents, agents);
    refill(this.broken, broken);
    this.#skills = skills;
    const skillsAfter = skillFingerprints(skills);
    const allErrors = [...errors, ...skills.errors];
    const reported = this.#reportedErrors;
    this.#reportedErrors = new Set(allErrors.map((error) => error.message));
    return {
      added: [...agents.keys()].filter((id) => !before.has(id)),
      changed: [...agents.keys()].filter(
        (id) => before.has(id) && JSON.stringify(before.get(id)) !== JSON.stringify(agents.get(id)),
      ),
      removed: [...before.keys()].filter((id) => !agents.has(id)),
      skills: changedSkillNames(skillsBefore, skillsAfter),
      errors: allErrors.filter((error) => !reported.has(error.message)),
    };
  }

  /**
   * The warnings about the agents' skill listings not given by the call before: names in
   * an AGENT.md `skills` list that no skill has, and skills left out of a listing over
   * its budget.
   */
  warnings(settings: ListingSettings): string[] {
    const agents = new Map(this.agents);
    if (!agents.has(settings.defaultAgentId) && !this.broken.has(settings.defaultAgentId)) {
      agents.set(settings.defaultAgentId, builtInAgent(settings.defaultAgentId));
    }
    const warnings = [...agents.values()].flatMap((agent) => this.#warningsOf(agent, settings));
    const reported = this.#reportedWarnings;
    this.#reportedWarnings = new Set(warnings);
    return warnings.filter((warning) => !reported.has(warning));
  }

  #warningsOf(agent: AgentDefinition, settings: ListingSettings): string[] {
    const { skills, missing } = skillsOfAgent(this.#skills, agent);
    const { leftOut } = skillListing(skills, settings.workspace, settings.maxListingChars);
    return [
      ...missing.map(
        (name) =>
          `${agent.source}: skills: no skill "${name}" in skills/ or agents/${agent.id}/skills/; ` +
          `add skills/${name}/SKILL.md or remove it from the list`,
      ),
      ...(leftOut.length > 0
        ? [listingBudgetWarning(agent.id, leftOut, settings.maxListingChars)]
        : []),
    ];
  }
}

function refill<Value>(target: Map<string, Value>, source: ReadonlyMap<string, Value>): void {
  target.clear();
  for (const [key, value] of source) target.set(key, value);
}

/** The names of the skills added, changed or removed between two fingerprints, sorted. */
function changedSkillNames(before: Map<string, string>, after: Map<string, string>): string[] {
  const keys = new Set([...before.keys(), ...after.keys()]);
  const changed = [...keys].filter((key) => before.get(key) !== after.get(key));
  return [...new Set(changed.map((key) => key.slice(key.lastIndexOf("/") + 1)))].sort();
}

/** Each skill as `<scope>/<name>` → its definition as JSON, to see which ones changed. */
function skillFingerprints(loaded: LoadedSkills): Map<string, string> {
  const fingerprints = new Map<string, string>();
  for (const skill of loaded.shared.values()) {
    fingerprints.set(`skills/${skill.name}`, JSON.stringify(skill));
  }
  for (const [agentId, skills] of loaded.byAgent) {
    for (const skill of skills.values()) {
      fingerprints.set(`agents/${agentId}/${skill.name}`, JSON.stringify(skill));
    }
  }
  return fingerprints;
}
