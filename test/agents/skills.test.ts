/** Skills on the real file system: what loads, what is reported and skipped, the listing. */
import { symlinkSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentCatalog } from "../../src/agents/catalog.js";
import { loadSkills, skillListing, skillsOfAgent } from "../../src/agents/skills.js";
import { makeWorkspace, type TempWorkspace } from "../helpers/workspace.js";

let ws: TempWorkspace;
beforeEach(() => {
  ws = makeWorkspace();
});
afterEach(() => ws.remove());

function skillText(frontMatter: string, body = "Step 1: do the thing.") {
  return `---\n${frontMatter}\n---\n${body}\n`;
}

function writeSkill(folder: string, frontMatter: string, body?: string): string {
  return ws.write(`${folder}/SKILL.md`, skillText(frontMatter, body));
}

function errorsOf(): string[] {
  return loadSkills(ws.dir).errors.map((error) => error.message);
}

describe("loading skills", () => {
  it("loads a valid skill with every field of the format", () => {
    writeSkill(
      "skills/pdf-forms",
      [
        "name: pdf-forms",
        "description: Fill in PDF forms. Use when the user sends a form to complete.",
        "license: MIT",
        "compatibility: needs python3",
        "metadata: { author: ann, version: '1.2' }",
        "allowed-tools: bash read",
      ].join("\n"),
    );
    const { shared, errors } = loadSkills(ws.dir);
    expect(errors).toEqual([]);
    expect(shared.get("pdf-forms")).toMatchObject({
      name: "pdf-forms",
      description: "Fill in PDF forms. Use when the user sends a form to complete.",
      license: "MIT",
      compatibility: "needs python3",
      metadata: { author: "ann", version: "1.2" },
      allowedTools: ["bash", "read"],
      folder: join(ws.dir, "skills/pdf-forms"),
      scope: { kind: "workspace" },
    });
  });

  it("reports an invalid name with the rule, and skips only that skill", () => {
    writeSkill("skills/good", "name: good\ndescription: Works.");
    const file = writeSkill("skills/Bad--Name", "name: Bad--Name\ndescription: Broken.");
    const { shared, errors } = loadSkills(ws.dir);
    expect([...shared.keys()]).toEqual(["good"]);
    expect(errors.map((error) => error.message)).toEqual([
      `${file}: name: expected a skill name: 1 to 64 lowercase letters, digits and hyphens, ` +
        'not starting or ending with a hyphen and without "--" (e.g. pdf-forms), found "Bad--Name"; correct it.',
    ]);
  });

  it("refuses names with a leading hyphen or over 64 characters", () => {
    writeSkill("skills/-lead", "name: -lead\ndescription: x");
    const long = "a".repeat(65);
    writeSkill(`skills/${long}`, `name: ${long}\ndescription: x`);
    const errors = errorsOf();
    expect(errors).toHaveLength(2);
    for (const error of errors) expect(error).toContain("name: expected a skill name");
  });

  it("reports a name that differs from its folder", () => {
    const file = writeSkill("skills/pdf", "name: pdf-forms\ndescription: Fill in PDF forms.");
    expect(errorsOf()).toEqual([
      `${file}: name: "pdf-forms" differs from its folder "pdf"; rename the folder or change the name so they match.`,
    ]);
  });

  it("reports a missing description", () => {
    const file = writeSkill("skills/notes", "name: notes");
    expect(errorsOf()).toEqual([
      `${file}: description: missing (expected text of 1 to 1024 characters saying what the skill does and when to use it); add it.`,
    ]);
  });

  it("reports a description over 1024 characters", () => {
    const file = writeSkill("skills/notes", `name: notes\ndescription: ${"d".repeat(1025)}`);
    expect(errorsOf()).toEqual([
      `${file}: description: expected text of 1 to 1024 characters saying what the skill does ` +
        `and when to use it, found "${"d".repeat(57)}..."; correct it.`,
    ]);
  });

  it("reports an unknown field with a suggestion, and a compatibility over 500 characters", () => {
    const file = writeSkill(
      "skills/notes",
      `name: notes\ndescription: x\nlicence: MIT\ncompatibility: ${"c".repeat(501)}`,
    );
    const [message] = errorsOf();
    expect(message).toContain(`${file}: licence: unknown key; did you mean "license"?`);
    expect(message).toContain(`${file}: compatibility: expected text of at most 500 characters`);
  });

  it("reports a folder without SKILL.md and a file without front matter", () => {
    ws.write("skills/empty/notes.txt", "not a skill");
    const bare = ws.write("skills/bare/SKILL.md", "Just instructions.\n");
    expect(errorsOf()).toEqual([
      `${bare}: missing YAML front matter; start the file with a line "---", then the fields ` +
        '(name, description, optional license, compatibility, metadata, allowed-tools), then another "---" line.',
      `${join(ws.dir, "skills/empty")}: no SKILL.md; add one (front matter with name and description, then the instructions) or remove the folder.`,
    ]);
  });

  it("refuses a skill folder that is a symlink out of the workspace", () => {
    const outside = makeWorkspace();
    try {
      outside.write("linked/SKILL.md", skillText("name: linked\ndescription: x"));
      ws.write("skills/.keep", "");
      symlinkSync(join(outside.dir, "linked"), join(ws.dir, "skills/linked"));
      expect(errorsOf()).toEqual([
        `${join(ws.dir, "skills/linked")}: leads outside the workspace (a symlink); copy the skill into the workspace instead of linking it.`,
      ]);
    } finally {
      outside.remove();
    }
  });
});

describe("an agent's skills", () => {
  beforeEach(() => {
    writeSkill("skills/alpha", "name: alpha\ndescription: Shared alpha.");
    writeSkill("skills/beta", "name: beta\ndescription: Shared beta.");
    writeSkill("agents/coder/skills/beta", "name: beta\ndescription: Coder's own beta.");
  });

  it("are the workspace's and its own, its own winning a name clash, in name order", () => {
    const loaded = loadSkills(ws.dir);
    const coder = skillsOfAgent(loaded, { id: "coder" }).skills;
    expect(coder.map((skill) => [skill.name, skill.description])).toEqual([
      ["alpha", "Shared alpha."],
      ["beta", "Coder's own beta."],
    ]);
    const other = skillsOfAgent(loaded, { id: "other" }).skills;
    expect(other.map((skill) => skill.description)).toEqual(["Shared alpha.", "Shared beta."]);
  });

  it("are only those AGENT.md lists; names without a skill are reported", () => {
    const loaded = loadSkills(ws.dir);
    expect(skillsOfAgent(loaded, { id: "x", skills: ["beta", "gamma"] })).toMatchObject({
      skills: [{ name: "beta" }],
      missing: ["gamma"],
    });
    expect(skillsOfAgent(loaded, { id: "x", skills: [] }).skills).toEqual([]);
  });
});

describe("the skill listing", () => {
  it("names each skill, its description and its file, never its body", () => {
    writeSkill("skills/alpha", "name: alpha\ndescription: Does alpha things.", "SECRET BODY");
    const { skills } = skillsOfAgent(loadSkills(ws.dir), { id: "pickle" });
    const { text, leftOut } = skillListing(skills, ws.dir, 8000);
    expect(text).toContain("- alpha: Does alpha things. (skills/alpha/SKILL.md)");
    expect(text).not.toContain("SECRET BODY");
    expect(leftOut).toEqual([]);
  });

  it("leaves out what passes the budget, and the catalog warns once with the fix", () => {
    writeSkill("skills/alpha", `name: alpha\ndescription: ${"a".repeat(300)}`);
    writeSkill("skills/beta", `name: beta\ndescription: ${"b".repeat(300)}`);
    ws.write("picklebot.yaml", "");
    const { skills } = skillsOfAgent(loadSkills(ws.dir), { id: "pickle" });
    const { text, leftOut } = skillListing(skills, ws.dir, 800);
    expect(text.length).toBeLessThanOrEqual(800);
    expect(text).toContain("- alpha:");
    expect(leftOut).toEqual(["beta"]);

    const catalog = new AgentCatalog(ws.dir);
    catalog.load();
    const settings = { workspace: ws.dir, maxListingChars: 800, defaultAgentId: "pickle" };
    expect(catalog.warnings(settings)).toEqual([
      'agent "pickle": 1 skill(s) left out of the system prompt because the listing would pass ' +
        "skills.max_listing_chars (800): beta; raise skills.max_listing_chars in picklebot.yaml, " +
        "shorten skill descriptions, or list fewer skills in the agent's AGENT.md (skills: [...])",
    ]);
    expect(catalog.warnings(settings)).toEqual([]);
  });
});
